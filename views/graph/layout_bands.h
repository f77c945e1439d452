#pragma once
// Cuts big flat graphs into bands for the nested layout. Graphviz 2.42's dot spends time growing
// with the square of a graph's size in coordinate assignment (its network simplex builds the
// initial tree edge by edge: 5,000 boxes take ~3 s); a stack of bands of a few hundred boxes each
// takes a tenth of that and looks the same, but for a wider gap where two bands meet.
#include "graph/graph_layout.h"

namespace kiln::views {

struct BandedGraph {
  LayoutGraph graph;     // the input plus frameless band clusters
  size_t firstBand = 0;  // clusters from this index on are bands
};

// Every container (the top level or a cluster) holding more than `maxItems` direct items (boxes
// and child clusters) gets its items moved into bands: clusters without frame or title holding
// consecutive levels (longest path from the container's sources, following the node order), at
// least `maxItems` items each but the last. Nodes and clusters keep their indices.
BandedGraph cutIntoBands(const LayoutGraph& graph, int maxItems);

}  // namespace kiln::views
