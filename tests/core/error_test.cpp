// core/error.hpp: the nearest valid name suggested for a mistyped one.

#include "core/error.hpp"

#include <gtest/gtest.h>

namespace dsgd {
namespace {

TEST(CoreError, TheNearestNameIsFewEditsAwayOrTheOnlyOneItBegins) {
  const std::vector<std::string> models = {"lenet", "alexnet", "resnet50", "resnet101", "vgg16", "vgg19"};
  EXPECT_EQ(nearest_name("lenett", models), "lenet") << "one inserted";
  EXPECT_EQ(nearest_name("LeNet", models), "lenet") << "case ignored";
  EXPECT_EQ(nearest_name("alexnte", models), "alexnet") << "two neighbours swapped";
  EXPECT_EQ(nearest_name("resnet5", models), "resnet50");
  EXPECT_EQ(nearest_name("vgg17", models), std::nullopt) << "vgg16 and vgg19 are equally near";
  EXPECT_EQ(nearest_name("googlenet", models), std::nullopt) << "nothing near";
  EXPECT_EQ(nearest_name("alex", models), "alexnet") << "the only one it begins";
  EXPECT_EQ(nearest_name("res", models), std::nullopt) << "two begin with it";
  EXPECT_EQ(nearest_name("", models), std::nullopt);
  EXPECT_EQ(std::string(UnknownNameError("model", "lenett", models).what()),
            "unknown model 'lenett'; did you mean 'lenet'? valid values are: lenet, alexnet, resnet50, resnet101, "
            "vgg16, vgg19");
  EXPECT_EQ(std::string(UnknownNameError("model", "gpt", models).what()),
            "unknown model 'gpt'; valid values are: lenet, alexnet, resnet50, resnet101, vgg16, vgg19");
}

}  // namespace
}  // namespace dsgd
