#include <gtest/gtest.h>
TEST(Sim, Placeholder) {}
