// SPDX-License-Identifier: Apache-2.0
// The Catch2 main shared by all crossfree test binaries.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
