# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench/lib/syscalls.sh: how system calls per request are counted, for bench/run.sh's table
# (lib/measure.sh) and bench/tools/ab_builds.sh (SYSCALLS=1). Sourced; defines only.

# How measure_syscalls counts, set by pick_syscall_method: "perf" (the kernel's tracepoints, read
# with perf stat: counted in the kernel, so the target runs at nearly its own pace, and a read that
# finds nothing is counted as it happens under load), "strace" (strace -c -f: it slows the target,
# which then finds bytes waiting more often and makes fewer such reads; only when SYSCALLS=strace
# asks for it), or "" (neither: no table).
# perf's arguments are in syscall_perf_args: every call (raw_syscalls:sys_enter), each call by its
# name, and the reads that found nothing: recvfrom and recvmsg returning -EAGAIN (-11), counted
# from their exit tracepoints with a filter.
syscall_method=""
syscall_events=""
syscall_perf_args=()
pick_syscall_method() {
    local tracing="" dir name
    for dir in /sys/kernel/tracing /sys/kernel/debug/tracing; do
        [[ -d $dir/events/syscalls ]] && tracing=$dir && break
    done
    if [[ ${SYSCALLS:-1} != strace && -n $tracing ]] && command -v perf >/dev/null &&
        perf stat -e raw_syscalls:sys_enter -o /dev/null -- true >/dev/null 2>&1; then
        syscall_events=raw_syscalls:sys_enter
        for name in read readv recvfrom recvmsg write writev sendto sendmsg sendfile64 epoll_wait epoll_pwait \
            epoll_ctl accept4 close getsockopt setsockopt openat newfstatat pread64 futex madvise \
            timerfd_settime io_uring_enter; do
            [[ -d $tracing/events/syscalls/sys_enter_$name ]] && syscall_events+=",syscalls:sys_enter_$name"
        done
        syscall_perf_args=(-e "$syscall_events")
        for name in recvfrom recvmsg; do
            [[ -d $tracing/events/syscalls/sys_exit_$name ]] &&
                syscall_perf_args+=(-e "syscalls:sys_exit_$name" --filter 'ret == -11')
        done
        syscall_method=perf
    elif [[ ${SYSCALLS:-1} = strace ]] && command -v strace >/dev/null; then
        syscall_method=strace
    fi
}

# perf_syscall_counts FILE: the counts a `perf stat -x, "${syscall_perf_args[@]}"` wrote to FILE,
# as "count name" lines: "all" for raw_syscalls:sys_enter, each call by its name, "empty" for the
# reads that found nothing (recvfrom and recvmsg together); calls never made are left out.
perf_syscall_counts() {
    awk -F, '$1 ~ /^[0-9]+$/ {
        if ($3 == "raw_syscalls:sys_enter") print $1, "all"
        else if ($3 ~ /^syscalls:sys_enter_/ && $1 > 0) { sub(/^syscalls:sys_enter_/, "", $3); print $1, $3 }
        else if ($3 ~ /^syscalls:sys_exit_/) empty += $1
    } END { if (empty > 0) print empty, "empty" }' "$1" 2>/dev/null || true
}
