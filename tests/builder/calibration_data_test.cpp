// Calibration data folders: the naming rule (NAME.npy or NAME.0.npy, NAME.1.npy, ...), batches cut
// along a fixed batch dim, and one clear error for each way a folder can be wrong.
#include <kiln/error.h>
#include <kiln/npy.h>

#include "builder/calibration/calibration_data.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

using namespace kiln;
using namespace kiln::calibration;
namespace fs = std::filesystem;

namespace {

// Inputs "x" [N, 3, 5] (dynamic batch) and "scene/depth:0" [2, 4] (fixed batch 2).
Network twoInputs() {
  Network n;
  n.addInput("x", DataType::kFloat32, Shape({Dim::symbol("N"), 3, 5}));
  n.addInput("scene/depth:0", DataType::kFloat32, Shape({2, 4}));
  return n;
}

class CalibrationData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_calib_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void put(const std::string& file, const HostTensor& t) { writeNpyFile(t, (dir_ / file).string()); }
  std::string folder() const { return dir_.string(); }
  // The message of the error loading the folder throws (the test fails when none is thrown).
  std::string failure() {
    try {
      loadCalibrationData(twoInputs(), folder(), 0);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }
  fs::path dir_;
};

}  // namespace

TEST_F(CalibrationData, NumberedFilesAreBatchesAndAFixedBatchDimCutsAFile) {
  put("x.0.npy", test::randomFloats({4, 3, 5}, 1));
  put("x.1.npy", test::randomFloats({1, 3, 5}, 2));
  put("x.2.npy", test::randomFloats({3, 3, 5}, 3));
  put("scene_depth_0.npy", test::randomFloats({6, 4}, 4));  // 3 batches of the fixed 2
  const auto batches = loadCalibrationData(twoInputs(), folder(), 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].at("x").dims(), (std::vector<int64_t>{4, 3, 5}));
  EXPECT_EQ(batches[1].at("x").dims(), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(batches[2].at("scene/depth:0").dims(), (std::vector<int64_t>{2, 4}));
  const HostTensor whole = readNpyFile((dir_ / "scene_depth_0.npy").string());
  EXPECT_EQ(batches[2].at("scene/depth:0").data<float>()[0], whole.data<float>()[16]);  // rows 4-5
  EXPECT_EQ(loadCalibrationData(twoInputs(), folder(), 2).size(), 2u);  // --calib-batches 2
}

TEST_F(CalibrationData, AMissingInputNamesTheFilesItLooksFor) {
  put("x.npy", test::randomFloats({2, 3, 5}, 1));
  const std::string why = failure();
  EXPECT_NE(why.find("no file for input 'scene/depth:0'"), std::string::npos) << why;
  EXPECT_NE(why.find("scene_depth_0.npy"), std::string::npos) << why;
}

TEST_F(CalibrationData, WrongTypesShapesAndStrayFilesAreNamed) {
  put("scene_depth_0.npy", test::randomFloats({2, 4}, 1));
  put("x.npy", HostTensor(DataType::kFloat64, {2, 3, 5}));
  EXPECT_NE(failure().find("x.npy holds float64 values but input 'x' is float32"), std::string::npos);
  put("x.npy", test::randomFloats({2, 3, 6}, 2));
  EXPECT_NE(failure().find("dim 2 differs"), std::string::npos);
  put("x.npy", test::randomFloats({3, 5}, 3));
  EXPECT_NE(failure().find("the ranks differ"), std::string::npos);
  put("x.npy", test::randomFloats({2, 3, 5}, 4));
  put("scene_depth_0.npy", test::randomFloats({3, 4}, 5));
  EXPECT_NE(failure().find("multiple of it"), std::string::npos);
  put("scene_depth_0.npy", test::randomFloats({2, 4}, 6));
  put("y.npy", test::randomFloats({2, 3, 5}, 7));
  EXPECT_NE(failure().find("y.npy names no input of the model"), std::string::npos);
}

TEST_F(CalibrationData, GapsMixedFormsUnequalCountsAndNonFiniteValuesAreRefused) {
  put("scene_depth_0.npy", test::randomFloats({2, 4}, 1));
  put("x.0.npy", test::randomFloats({2, 3, 5}, 2));
  put("x.2.npy", test::randomFloats({2, 3, 5}, 3));
  EXPECT_NE(failure().find("x.1.npy is missing"), std::string::npos);
  put("x.1.npy", test::randomFloats({2, 3, 5}, 4));
  EXPECT_NE(failure().find("'scene/depth:0' has 1 batch(es)"), std::string::npos);
  put("scene_depth_0.npy", test::randomFloats({6, 4}, 5));
  put("x.npy", test::randomFloats({2, 3, 5}, 6));
  EXPECT_NE(failure().find("keep one of the two forms"), std::string::npos);
  fs::remove(dir_ / "x.npy");
  HostTensor bad = test::randomFloats({2, 3, 5}, 7);
  bad.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  put("x.1.npy", bad);
  EXPECT_NE(failure().find("non-finite"), std::string::npos);
}

TEST_F(CalibrationData, AFileInsteadOfAFolderIsNamed) {
  put("x.npy", test::randomFloats({2, 3, 5}, 1));
  EXPECT_THROW(loadCalibrationData(twoInputs(), (dir_ / "x.npy").string(), 0), Error);
  try {
    loadCalibrationData(twoInputs(), (dir_ / "missing").string(), 0);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a folder"), std::string::npos);
  }
}
