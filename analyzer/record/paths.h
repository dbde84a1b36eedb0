// SPDX-License-Identifier: Apache-2.0
// File-name helpers of the recording host: where a trace goes and what a
// path names. Pure functions of their arguments and the process's current
// directory; any thread.
#pragma once

#include <string>

namespace crossfree::analyzer::record {

std::string Dirname(const std::string& path);   // "." when there is no slash
std::string Basename(const std::string& path);
std::string CurrentDir();                        // "." when getcwd fails
std::string Absolute(const std::string& path);  // against CurrentDir()
bool IsFile(const std::string& path);            // a regular file (following links)

}  // namespace crossfree::analyzer::record
