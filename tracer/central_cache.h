// SPDX-License-Identifier: Apache-2.0
// Tracer: interposers for gperftools tcmalloc's central free-list transfers
// (ThreadCache::FetchFromCentralCache / ReleaseToCentralCache and
// CentralFreeList::InsertRange / RemoveRange), which Debian's
// libtcmalloc.so.4 calls through its PLT. Each call is forwarded to the next
// definition (dlsym RTLD_NEXT, resolved on first use) and recorded as a
// kTagCentral record through RecordCentral (recorder.h). See docs/guide/central.md.
//
// Any thread may call the hooks, from inside tcmalloc; they never allocate,
// lock or use stdio. When libtcmalloc is not loaded nobody calls them.
#pragma once

namespace crossfree::tracer {

// The exported hooks are extern "C" functions with tcmalloc's mangled
// names, defined in central_cache.cc; nothing else is declared here.

}  // namespace crossfree::tracer
