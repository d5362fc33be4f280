// The convolutional networks of the zoo, written as their reference code builds them, module by
// module, so that names, element counts and FLOPs all follow from the architecture.

#include <string>

#include "sim/train/model_builder.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::train {

using detail::ConvNetBuilder;
using detail::Shape;

namespace {

constexpr int kImageNetClasses = 1000;
constexpr int kCifar10Classes = 10;
constexpr Shape kImageNetInput{3, 224, 224};
constexpr Shape kCifarInput{3, 32, 32};

std::string idx(int i) {
  return std::to_string(i);
}

}  // namespace

Model build_resnet50() {
  // torchvision/models/resnet.py: ResNet(Bottleneck, [3, 4, 6, 3]); Bottleneck.expansion = 4,
  // stride on conv2 (the 3x3: "ResNet V1.5"), downsample = conv1x1 + BN when stride != 1 or the
  // channel count changes. Registration order: conv1, bn1, conv2, bn2, conv3, bn3, downsample.
  ConvNetBuilder b(kImageNetInput);
  b.conv("conv1", 64, 7, 2, 3);
  b.batch_norm("bn1");
  b.max_pool(3, 2, 1);
  constexpr int kBlocks[] = {3, 4, 6, 3};
  constexpr int kPlanes[] = {64, 128, 256, 512};
  constexpr int kStrides[] = {1, 2, 2, 2};
  constexpr int kExpansion = 4;
  for (int stage = 0; stage < 4; ++stage) {
    for (int block = 0; block < kBlocks[stage]; ++block) {
      const std::string p = "layer" + idx(stage + 1) + "." + idx(block) + ".";
      const int stride = block == 0 ? kStrides[stage] : 1;
      const int planes = kPlanes[stage];
      const Shape in = b.shape();
      b.conv(p + "conv1", planes, 1, 1, 0);
      b.batch_norm(p + "bn1");
      b.conv(p + "conv2", planes, 3, stride, 1);
      b.batch_norm(p + "bn2");
      b.conv(p + "conv3", planes * kExpansion, 1, 1, 0);
      b.batch_norm(p + "bn3");
      if (stride != 1 || in.channels != planes * kExpansion) {
        const Shape out = b.shape();
        b.set_shape(in);
        b.conv(p + "downsample.0", planes * kExpansion, 1, stride, 0);
        b.batch_norm(p + "downsample.1");
        b.set_shape(out);
      }
    }
  }
  b.global_avg_pool();
  b.linear("fc", kImageNetClasses);
  return b.finish("resnet50", "ResNet-50 v1.5 (torchvision resnet50), ImageNet, 1000 classes",
                  "torchvision/models/resnet.py; published 25,557,032 parameters and 4.09 GFLOPS "
                  "(multiply-adds) at 224x224 (pytorch.org/vision resnet50 docs)");
}

Model build_mobilenet_v2() {
  // torchvision/models/mobilenetv2.py, width_mult 1.0, round_nearest 8 (all channel counts below
  // are already multiples of 8). features.0 = Conv-BN-ReLU6 3x3 stride 2; InvertedResidual
  // (t, c, n, s); features.18 = Conv-BN-ReLU6 1x1 to 1280; classifier = Dropout, Linear.
  // InvertedResidual.conv: [1x1 expand Conv-BN-ReLU6 if t != 1], 3x3 depthwise Conv-BN-ReLU6,
  // 1x1 projection Conv, BN. Residual adds have no parameters.
  ConvNetBuilder b(kImageNetInput);
  b.conv("features.0.0", 32, 3, 2, 1);
  b.batch_norm("features.0.1");
  struct Setting {
    int t, c, n, s;
  };
  constexpr Setting kSettings[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                   {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int feature = 1;
  for (const Setting& st : kSettings) {
    for (int i = 0; i < st.n; ++i, ++feature) {
      const std::string p = "features." + idx(feature) + ".conv.";
      const int stride = i == 0 ? st.s : 1;
      const int hidden = b.shape().channels * st.t;
      int k = 0;
      if (st.t != 1) {
        b.conv(p + "0.0", hidden, 1, 1, 0);
        b.batch_norm(p + "0.1");
        k = 1;
      }
      b.conv(p + idx(k) + ".0", hidden, 3, stride, 1, /*groups=*/hidden);
      b.batch_norm(p + idx(k) + ".1");
      b.conv(p + idx(k + 1), st.c, 1, 1, 0);
      b.batch_norm(p + idx(k + 2));
    }
  }
  b.conv("features." + idx(feature) + ".0", 1280, 1, 1, 0);
  b.batch_norm("features." + idx(feature) + ".1");
  b.global_avg_pool();
  b.linear("classifier.1", kImageNetClasses);
  return b.finish("mobilenetv2",
                  "MobileNetV2 width 1.0 (torchvision mobilenet_v2), ImageNet, 1000 classes",
                  "torchvision/models/mobilenetv2.py; published 3,504,872 parameters "
                  "(pytorch.org/vision mobilenet_v2 docs) and 300M multiply-adds at 224x224 "
                  "(Sandler et al. 2018, arXiv:1801.04381 Table 4; torchvision lists 0.30 GFLOPS)");
}

Model build_resnet56() {
  // He et al. 2016 section 4.2: 3x3 conv (16), then 3 stages of n = 9 basic blocks with 16, 32,
  // 64 filters on 32x32, 16x16, 8x8 maps (stride 2 at the first block of stages 2 and 3), global
  // average pooling, 10-way fully connected layer with bias. Option A shortcuts: identity with
  // zero-padded extra channels and stride-2 subsampling, no parameters, no multiply-adds.
  // Names as in akamaster/pytorch_resnet_cifar10 resnet.py (conv1, bn1, layerN.i.convK/bnK,
  // linear).
  ConvNetBuilder b(kCifarInput);
  b.conv("conv1", 16, 3, 1, 1);
  b.batch_norm("bn1");
  constexpr int kBlocksPerStage = 9;  // depth 6n + 2 = 56
  constexpr int kPlanes[] = {16, 32, 64};
  constexpr int kStrides[] = {1, 2, 2};
  for (int stage = 0; stage < 3; ++stage) {
    for (int block = 0; block < kBlocksPerStage; ++block) {
      const std::string p = "layer" + idx(stage + 1) + "." + idx(block) + ".";
      const int stride = block == 0 ? kStrides[stage] : 1;
      b.conv(p + "conv1", kPlanes[stage], 3, stride, 1);
      b.batch_norm(p + "bn1");
      b.conv(p + "conv2", kPlanes[stage], 3, 1, 1);
      b.batch_norm(p + "bn2");
    }
  }
  b.global_avg_pool();
  b.linear("linear", kCifar10Classes);
  return b.finish("resnet56",
                  "ResNet-56 for CIFAR-10 (He et al. 2016, option A identity shortcuts), 10 "
                  "classes",
                  "He et al. 2016 arXiv:1512.03385 section 4.2 (0.85M parameters); names from "
                  "akamaster/pytorch_resnet_cifar10 resnet.py");
}

Model build_vgg16() {
  // torchvision/models/vgg.py cfgs["D"], batch_norm=False: each number is Conv2d(3x3, pad 1) +
  // ReLU (two modules), "M" is MaxPool2d(2, 2) (one module), so the conv indices in `features`
  // skip the ReLU and pool slots. AdaptiveAvgPool2d((7, 7)) is the identity at 224x224.
  // classifier = Linear(25088, 4096), ReLU, Dropout, Linear(4096, 4096), ReLU, Dropout,
  // Linear(4096, 1000).
  ConvNetBuilder b(kImageNetInput);
  constexpr int kPool = 0;
  constexpr int kConfigD[] = {64,    64,  kPool, 128, 128,   kPool, 256, 256, 256,
                              kPool, 512, 512,   512, kPool, 512,   512, 512, kPool};
  int module = 0;
  for (int v : kConfigD) {
    if (v == kPool) {
      b.max_pool(2, 2, 0);
      module += 1;
    } else {
      b.conv("features." + idx(module), v, 3, 1, 1, 1, /*bias=*/true);
      module += 2;
    }
  }
  b.linear("classifier.0", 4096);
  b.linear("classifier.3", 4096);
  b.linear("classifier.6", kImageNetClasses);
  return b.finish("vgg16", "VGG-16 (torchvision vgg16, configuration D, no batch norm), ImageNet",
                  "torchvision/models/vgg.py; published 138,357,544 parameters and 15.47 GFLOPS "
                  "(multiply-adds) at 224x224 (pytorch.org/vision vgg16 docs)");
}

}  // namespace adaptsim::train
