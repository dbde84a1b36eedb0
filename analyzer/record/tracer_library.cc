// SPDX-License-Identifier: Apache-2.0
#include "analyzer/record/tracer_library.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <fmt/core.h>

#include "analyzer/record/messages.h"
#include "analyzer/record/paths.h"

namespace crossfree::analyzer::record {
namespace {

// `searched` lists the places looked at.
std::optional<std::string> FindTracerLibrary(std::string* searched) {
  if (const char* env = getenv("CROSSFREE_TRACER_LIB"); env != nullptr && *env != '\0') {
    *searched = env;
    if (IsFile(env)) return Absolute(env);
    return std::nullopt;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return std::nullopt;
  exe[n] = '\0';
  std::string bin = Dirname(exe);
  const char* kCandidates[] = {"/../lib/", "/", "/../lib64/", "/../lib/x86_64-linux-gnu/",
                               "/../lib/crossfree/"};
  for (const char* dir : kCandidates) {
    std::string path = bin + dir + "libcrossfree-trace.so";
    if (!searched->empty()) *searched += ", ";
    *searched += path;
    if (IsFile(path)) {
      char real[PATH_MAX];
      if (realpath(path.c_str(), real) != nullptr) return std::string(real);
      return path;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> TracerLibraryOrError() {
  std::string searched;
  std::optional<std::string> library = FindTracerLibrary(&searched);
  if (!library) {
    Say("crossfree record: cannot find libcrossfree-trace.so (looked at {})\n",
        searched);
  }
  return library;
}

}  // namespace crossfree::analyzer::record
