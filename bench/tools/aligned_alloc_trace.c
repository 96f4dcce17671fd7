// SPDX-License-Identifier: Apache-2.0
// Which coroutine frames go to the allocator, and how large they are. Asio allocates a frame it
// cannot recycle (over 1 020 bytes, or none of its kept blocks fits) with aligned_alloc, inlined
// into the coroutine's ramp function, so the caller's address names the coroutine.
//
//   gcc -O2 -shared -fPIC -o /tmp/aligned_alloc_trace.so bench/tools/aligned_alloc_trace.c -ldl
//   ALIGNED_ALLOC_TRACE=/tmp/frames.txt LD_PRELOAD=/tmp/aligned_alloc_trace.so build/bin/idemgate --config ...
//   (send N requests, stop the gateway: the file is written at exit)
//   sort -rn /tmp/frames.txt | head | while read count size offset binary; do
//       echo "$count $size $(addr2line -f -C -e "$binary" "0x$offset" | head -1)"; done
//
// Each line: calls, bytes, caller's offset in its binary, binary. A count equal to the number of
// requests is a frame allocated on every request. The counts are not guarded against threads: run
// the gateway with `threads: 1` (the other threads allocate frames only at start and stop).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { max_sites = 4096 };
static void* (*real_aligned_alloc)(size_t, size_t);
static uintptr_t site_address[max_sites];
static size_t site_size[max_sites];
static unsigned long site_count[max_sites];
static int sites;

void* aligned_alloc(size_t alignment, size_t size)
{
    if (!real_aligned_alloc)
        real_aligned_alloc = (void* (*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    uintptr_t caller = (uintptr_t)__builtin_return_address(0);
    int i = 0;
    for (; i < sites; ++i)
        if (site_address[i] == caller && site_size[i] == size)
            break;
    if (i < sites)
        ++site_count[i];
    else if (sites < max_sites) {
        site_address[sites] = caller;
        site_size[sites] = size;
        site_count[sites] = 1;
        ++sites;
    }
    return real_aligned_alloc(alignment, size);
}

__attribute__((destructor)) static void write_sites(void)
{
    const char* path = getenv("ALIGNED_ALLOC_TRACE");
    FILE* out = fopen(path ? path : "aligned_alloc_trace.txt", "w");
    if (!out)
        return;
    for (int i = 0; i < sites; ++i) {
        Dl_info info;
        if (dladdr((void*)site_address[i], &info) && info.dli_fname)
            fprintf(out, "%lu %zu %lx %s\n", site_count[i], site_size[i],
                    (unsigned long)(site_address[i] - (uintptr_t)info.dli_fbase), info.dli_fname);
    }
    fclose(out);
}
