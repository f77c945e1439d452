// `kiln build --int8` end to end on the bundled sample model: calibration from a folder of .npy
// batches, the cache written and reused (and refused for another calibrator), int8 layers named by
// inspect and close to the model in compare, and one clear error with no plan for each malformed
// calibration folder; calibration from a folder of PNG / JPEG images. And a Q/DQ model: `kiln build` fuses its pairs without calibration,
// `kiln inspect` lists what became of each QuantizeLinear / DequantizeLinear node.
#include <kiln/npy.h>

#include "app/cli_fixture.h"
#include "common/image_files.h"
#include "common/qdq_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using kiln::test::Cli;
using kiln::test::readFile;
namespace fs = std::filesystem;

namespace {

const std::string kSample = std::string(KILN_SOURCE_DIR) + "/resources/models/sample.onnx";
const std::string kProfile = "image:1x3x64x64/2x3x64x64/4x3x64x64";

class CliInt8 : public Cli {
 protected:
  // A calibration folder with `batches` files image.K.npy of [2, 3, 64, 64].
  std::string calibration(int batches, const std::string& name = "calib") {
    fs::create_directories(path(name));
    for (int k = 0; k < batches; ++k)
      kiln::writeNpyFile(kiln::test::randomFloats({2, 3, 64, 64}, 40 + k, -1.5f, 1.5f),
                         path(name + "/image." + std::to_string(k) + ".npy"));
    return path(name);
  }
  std::vector<std::string> build(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"build", kSample, "--save", path("out/s.plan"), "--profile", kProfile, "--int8"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

}  // namespace

// The sample model's scales: the 8 tensors its int8 layers quantize on entry and the 2 residuals
// they add (calibrated for ChainInt8Activations' int8 residuals).
TEST_F(CliInt8, CalibratesWritesTheCacheAndInspectShowsInt8Layers) {
  auto r = kiln(build({"--calib-data", calibration(3), "--calib-cache", path("s.cache"), "--calib-batches", "2"}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("calibration: entropy, 10 activation scales from 2 batch(es), cache written to"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("int8: 10 layer(s); 0 Conv/MatMul/Gemm layer(s) stay float"), std::string::npos) << r.out;
  EXPECT_EQ(readFile(path("s.cache")).rfind("# kiln calibration cache 1\n# model ", 0), 0u);

  auto inspect = kiln({"inspect", path("out/s.plan"), "--json"});
  ASSERT_EQ(inspect.exitCode, 0) << inspect.err;
  size_t int8Layers = 0;
  const auto info = nlohmann::json::parse(inspect.out);
  for (const auto& layer : info["layers"]) int8Layers += layer["precision"] == "int8";
  EXPECT_EQ(int8Layers, 10u);
  auto text = kiln({"inspect", path("out/s.plan")});
  EXPECT_NE(text.out.find("kiln.QuantizedConv   int8"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("int8 calibration: entropy, 10 activation scales from 2 batch(es)"), std::string::npos);

  // Really quantized, yet close: compare's tolerances fail at 1e-5 and pass at 5e-2.
  auto tight = kiln({"compare", kSample, path("out/s.plan"), "--shapes", "image:2x3x64x64", "--atol", "1e-6", "--rtol", "1e-5"});
  EXPECT_NE(tight.exitCode, 0) << tight.out;
  auto loose = kiln({"compare", kSample, path("out/s.plan"), "--shapes", "image:2x3x64x64", "--atol", "5e-2", "--rtol", "5e-2"});
  EXPECT_EQ(loose.exitCode, 0) << loose.out << loose.err;
}

TEST_F(CliInt8, TheCacheServesALaterBuildWithoutDataAndIsRefusedForAnotherCalibrator) {
  ASSERT_EQ(kiln(build({"--calib-data", calibration(2), "--calib-cache", path("s.cache")})).exitCode, 0);
  fs::remove(path("out/s.plan"));
  auto again = kiln(build({"--calib-cache", path("s.cache")}));
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_NE(again.out.find("from the cache"), std::string::npos) << again.out;
  fs::remove(path("out/s.plan"));
  expectFailure(build({"--calib-cache", path("s.cache"), "--calibrator", "percentile"}), 2,
                {"s.cache", "holds entropy scales but the percentile 99.99 calibrator was asked for"});
}

TEST_F(CliInt8, MalformedCalibrationDataGivesOneErrorAndNoPlan) {
  const std::string dir = path("bad");
  fs::create_directories(dir);
  expectFailure(build({"--calib-data", dir}), 2, {"holds no .npy files and no PNG / JPEG images"});
  kiln::writeNpyFile(kiln::HostTensor(kiln::DataType::kFloat64, {2, 3, 64, 64}), dir + "/image.npy");
  expectFailure(build({"--calib-data", dir}), 2, {"image.npy holds float64 values but input 'image' is float32"});
  kiln::writeNpyFile(kiln::test::randomFloats({2, 3, 32, 64}, 1), dir + "/image.npy");
  expectFailure(build({"--calib-data", dir}), 2, {"image.npy has shape [2,3,32,64]", "dim 2 differs"});
  expectFailure(build({"--calib-data", path("nowhere")}), 2, {"is not a folder"});
  expectFailure(build({}), 2, {"--calib-data"});
  expectFailure(build({"--calib-data", calibration(1), "--calibrator", "kl"}), 2, {"--calibrator 'kl'"});
  expectFailure({"build", kSample, "--save", path("out/s.plan"), "--calib-data", calibration(1)}, 2, {"need --int8"});
  expectFailure({"build", kSample, "--save", path("out/s.plan"), "--quantize-where-faster"}, 2,
                {"--quantize-where-faster needs --int8, --fp8 or --fp4"});
}

TEST_F(CliInt8, CalibratesFromAFolderOfImages) {
  fs::create_directories(path("photos"));
  for (int k = 0; k < 5; ++k) {
    const kiln::RgbImage image = kiln::test::randomImage(70 + 9 * k, 64 + 5 * k, uint32_t(k + 1));
    if (k % 2) kiln::test::writeJpeg(image, path("photos/p" + std::to_string(k) + ".jpg"));
    else kiln::test::writePng(image, path("photos/p" + std::to_string(k) + ".png"));
  }
  // The profile's opt batch is 2: five images give two batches and a short third.
  auto r = kiln(build({"--calib-data", path("photos"), "--calibrator", "minmax", "--calib-mean", "0.5,0.5,0.5",
                       "--calib-std", "0.25,0.25,0.25"}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("calibration: minmax, 10 activation scales from 3 batch(es)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int8: 10 layer(s)"), std::string::npos) << r.out;
  fs::remove(path("out/s.plan"));

  expectFailure(build({"--calib-data", path("photos"), "--calib-std", "0.2,0,0.2"}), 2, {"--calib-std '0.2,0,0.2'"});
  expectFailure(build({"--calib-data", path("photos"), "--calib-mean", "0.5,0.5"}), 2,
                {"--calib-mean '0.5,0.5' must be three numbers"});
  std::ofstream(path("photos/p9.jpg")) << "\xFF\xD8\xFF not really";
  expectFailure(build({"--calib-data", path("photos")}), 2, {"p9.jpg cannot be read: corrupt JPEG data"});
}

TEST_F(CliInt8, AQdqModelBuildsWithoutCalibrationAndInspectListsItsPairs) {
  const std::string model = save("qdq.onnx", kiln::test::qdqCnn(kiln::test::QdqStyle::kOnnxRuntime));
  auto built = kiln({"build", model, "--save", path("out/q.plan"), "--layer-precision", "gemm:fp32"});
  ASSERT_EQ(built.exitCode, 0) << built.err;
  EXPECT_NE(built.out.find("explicit quantization: 16 Q/DQ nodes, 9 fused into 2 int8 layer(s), 4 dropped, 3 stay float"),
            std::string::npos)
      << built.out;
  EXPECT_NE(built.err.find("Q/DQ nodes stay float"), std::string::npos) << built.err;

  auto text = kiln({"inspect", path("out/q.plan")});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("explicit quantization: 16 Q/DQ nodes, 9 fused into 2 int8 layer(s)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("DequantizeLinear w2_DequantizeLinear  fused into conv2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("DequantizeLinear wg_DequantizeLinear  unfused: Gemm 'gemm' stays float: "
                          "--layer-precision asks for fp32"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("QuantizeLinear   p1_QuantizeLinear  dropped: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not quantized: --layer-precision asks for fp32"), std::string::npos) << text.out;

  auto json = kiln({"inspect", path("out/q.plan"), "--json"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["qdq"].size(), 16u);
}

// --fp8 and --fp4 take the same calibration options; --fp4 says where FP4 runs; each layer takes
// the narrowest precision asked for unless --layer-precision names another; --calib-data without
// any quantized precision is a usage error.
TEST_F(CliInt8, Fp8AndFp4BuildsCalibrateAlikeAndFp4SaysWhereItRuns) {
  const std::string data = calibration(2);
  auto fp8 = kiln({"build", kSample, "--save", path("out/f8.plan"), "--profile", kProfile, "--fp8", "--calib-data", data,
                   "--calib-cache", path("f.cache")});
  ASSERT_EQ(fp8.exitCode, 0) << fp8.err;
  EXPECT_NE(fp8.out.find("fp8: 10 layer(s); 0 Conv/MatMul/Gemm layer(s) stay float"), std::string::npos) << fp8.out;
  EXPECT_EQ(fp8.err.find("Blackwell"), std::string::npos);
  auto inspect = kiln({"inspect", path("out/f8.plan")});
  EXPECT_NE(inspect.out.find("kiln.QuantizedConv   fp8"), std::string::npos) << inspect.out;

  auto fp4 = kiln({"build", kSample, "--save", path("out/f4.plan"), "--profile", kProfile, "--fp4", "--fp8",
                   "--calib-cache", path("f.cache")});
  ASSERT_EQ(fp4.exitCode, 0) << fp4.err;
  EXPECT_NE(fp4.err.find("fp4 (NVFP4) runs on Blackwell GPUs only"), std::string::npos) << fp4.err;
  EXPECT_NE(fp4.out.find("fp8: 0 layer(s), fp4: 10 layer(s)"), std::string::npos) << fp4.out;
  auto compare = kiln({"compare", kSample, path("out/f4.plan"), "--shapes", "image:2x3x64x64", "--atol", "1e-6",
                       "--rtol", "1e-5"});
  EXPECT_NE(compare.exitCode, 0) << "fp4 is really quantized: " << compare.out;

  auto usage = kiln({"build", kSample, "--save", path("out/u.plan"), "--calib-data", data});
  EXPECT_NE(usage.exitCode, 0);
  EXPECT_NE(usage.err.find("need --int8, --fp8 or --fp4"), std::string::npos) << usage.err;
  EXPECT_FALSE(fs::exists(path("out/u.plan")));
}
