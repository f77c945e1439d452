#pragma once
// The JSON form of the precision tools' shared values (precision_bisect.cpp, advice_export.cpp).
#include <kiln/precision_debug.h>

#include <nlohmann/json.hpp>

namespace kiln {

nlohmann::json scoreJson(const AccuracyScore& score);  // infinite errors as 1e308
nlohmann::json trialJson(const PrecisionTrial& trial);

}  // namespace kiln
