// SPDX-License-Identifier: Apache-2.0
#include "analyzer/record/paths.h"

#include <sys/stat.h>
#include <unistd.h>

namespace crossfree::analyzer::record {

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string CurrentDir() {
  char buf[4096];
  if (getcwd(buf, sizeof(buf)) == nullptr) return ".";
  return buf;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return CurrentDir() + "/" + path;
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace crossfree::analyzer::record
