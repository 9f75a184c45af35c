# Shared by run_pair.sh, dpdk_pair.sh and test/interop/mode_perftest.sh (sourced).

# The -p port of a server command line, or nothing.
server_port() {
    local prev= a
    for a in "$@"; do
        [ "$prev" = "-p" ] && echo "$a"
        prev=$a
    done
}

# Waits until a server listens on PORT (a loaded machine can take seconds to start
# it), without connecting to it (the client connects once); stops early if PID exits.
# Without a port, a moment.
wait_listening() { # PORT PID
    local _
    [ -n "$1" ] || { sleep 0.3; return; }
    for _ in $(seq 100); do
        if ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; then
            return
        fi
        kill -0 "$2" 2>/dev/null || return
        sleep 0.1
    done
}

# perftest measures its CPU clock against gettimeofday before it reports; on a loaded
# 2-core machine that fit can fail ("Correlation coefficient r^2: 0.18 < 0.9", then
# "Can't produce a report", exit 1) after the transfer itself went through. That is
# perftest's precondition, not the transport's: the callers run the pair again (at most
# twice) and say so. True if the client log FILE shows it.
perftest_clock_failed() { # FILE
    grep -q "Can't produce a report" "$1"
}

# After perftest_clock_failed: stops the server (PID) and shows why the pair runs again.
rerun_note() { # ATTEMPT FILE PID
    kill "$3" 2>/dev/null
    wait "$3" 2>/dev/null
    echo "== attempt $1: perftest could not calibrate its clock; running the pair again"
    grep -E "Correlation coefficient|Can't produce a report" "$2"
}

# Waits for the server (PID) run_attempts started: until it listens on its -p port.
# A caller whose server listens elsewhere (another namespace) defines its own after
# sourcing this file.
wait_server() { # PID
    wait_listening "$(server_port "${server[@]}")" "$1"
}

# One pair: the caller's start_server (in the background) and run_client, the client
# logging to CLIENT_LOG and the server to SERVER_LOG; sets src and crc. Reruns on
# perftest_clock_failed only, on either side: a send_bw server reports too, and when
# its own fit fails it exits 1 after the client's clean report (the client then only
# sees its closing handshake cut).
run_attempts() { # CLIENT_LOG SERVER_LOG
    local attempt spid
    for attempt in 1 2 3; do
        start_server
        spid=$!
        wait_server $spid
        run_client
        crc=$?
        if [ $crc -ne 0 ] && [ $attempt -lt 3 ] && perftest_clock_failed "$1"; then
            rerun_note $attempt "$1" $spid
            continue
        fi
        wait $spid
        src=$?
        if [ $src -ne 0 ] && [ $attempt -lt 3 ] && perftest_clock_failed "$2"; then
            rerun_note $attempt "$2" $spid
            continue
        fi
        return
    done
}
