// SPDX-License-Identifier: Apache-2.0
// Empty: the crossfree_catch_pch program only owns the precompiled Catch2
// header (tests/CMakeLists.txt).
int main() { return 0; }
