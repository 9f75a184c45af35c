#include "options.hpp"

#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dpdk/planes.hpp"
#include "dpdk/port.hpp"

namespace metaroce::perf {

namespace {

uint64_t parse_uint(const char* flag, const char* text, uint64_t min, uint64_t max)
{
    const std::string s = text;
    size_t used = 0;
    uint64_t v = 0;
    try {
        if (s.empty() || s[0] == '-') {
            throw std::invalid_argument(s);
        }
        v = std::stoull(s, &used, 0);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != s.size() || s.empty()) {
        throw std::invalid_argument(std::string("option ") + flag + ": '" + s +
                                    "' is not a number");
    }
    if (v < min || v > max) {
        throw std::invalid_argument(std::string("option ") + flag + ": " + s + " is out of range [" +
                                    std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return v;
}

enum long_only : int {
    opt_report_gbits = 256,
    opt_out_json,
    opt_out_json_file,
    opt_output,
    opt_run_infinitely,
    opt_cpu_util,
    opt_paths,
    opt_planes,
    opt_no_verify,
    opt_raw,
    opt_no_pdump,
    opt_mtu,
    opt_local,
    opt_timeout,
    opt_udp_csum,
    opt_tx_copy,
    opt_counters,
    opt_min_rto,
    opt_max_timeouts,
    opt_gateway,
    opt_plane_log,
    opt_cross_workers,
    opt_yield_idle,
    opt_backend,
    opt_inbound_capacity,
};

// "aa:..:ff[,aa:..:ff...]": one unicast next-hop MAC per plane.
std::vector<dpdk::mac_addr> parse_gateways(const std::string& text)
{
    std::vector<dpdk::mac_addr> out;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        const std::string one = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        dpdk::mac_addr m{};
        const std::string where = "--gateway: entry " + std::to_string(out.size()) + " '" + one + "'";
        if (!dpdk::parse_mac(one, m)) {
            throw std::invalid_argument(where + " is not a MAC address like 02:00:00:00:00:01");
        }
        if (m.is_zero() || (m.bytes[0] & 1) != 0) {
            throw std::invalid_argument(where + " is not a unicast MAC (zero, broadcast or multicast)");
        }
        out.push_back(m);
        if (comma == std::string::npos) {
            return out;
        }
        start = comma + 1;
    }
}

double parse_positive(const char* flag, const char* text)
{
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(v > 0)) {
        throw std::invalid_argument(std::string("option ") + flag + ": '" + text +
                                    "' is not a positive number");
    }
    return v;
}

output_kind parse_output(std::string_view v)
{
    if (v == "bandwidth") {
        return output_kind::bandwidth;
    }
    if (v == "latency") {
        return output_kind::latency;
    }
    if (v == "message_rate") {
        return output_kind::message_rate;
    }
    throw std::invalid_argument("--output: '" + std::string(v) +
                                "' is not bandwidth, latency or message_rate");
}

} // namespace

const char* test_title(test_kind t) noexcept
{
    switch (t) {
    case test_kind::write_bw: return "RDMA_Write BW Test";
    case test_kind::send_bw: return "Send BW Test";
    case test_kind::read_bw: return "RDMA_Read BW Test";
    case test_kind::write_lat: return "RDMA_Write Latency Test";
    case test_kind::send_lat: return "Send Latency Test";
    }
    return "?";
}

void print_usage(const char* prog)
{
    std::printf(
        "Usage: %s [EAL options] -- TEST [options] [server_addr]\n"
        "  TEST: write_bw | send_bw | read_bw | write_lat | send_lat\n"
        "  Server: no address (waits for the client). Client: the server's address.\n"
        "  Options (same on both sides, as in perftest):\n"
        "  -s, --size=SIZE        message size in bytes (default 65536 bw, 2 lat)\n"
        "  -a, --all              run sizes 2 .. 2^23\n"
        "  -n, --iters=N          iterations (default 5000 bw, 1000 lat)\n"
        "  -D, --duration=SEC     run for SEC seconds instead of -n\n"
        "  -q, --qp=N             connections (default 1)\n"
        "  -t, --tx-depth=N       outstanding messages per connection (default 128, lat 1)\n"
        "      --report_gbits     bandwidth in Gb/sec instead of MB/sec\n"
        "      --out_json         also write the results as JSON (file: perftest_out.json)\n"
        "      --out_json_file=F  the JSON file (implies --out_json)\n"
        "      --output=WHAT      print only bandwidth | latency | message_rate\n"
        "  -N, --no_peak          do not compute the BW peak (prints 0)\n"
        "  -m, --mtu=N            as --mtu (perftest spelling; 256..4096)\n"
        "  -F, --CPU-freq         accepted; the clock is the TSC, no frequency check\n"
        "  -w, --limit_bw=X       exit 1 when the average bandwidth is below X (table unit)\n"
        "  -y, --limit_msgrate=X  exit 1 when the message rate is below X Mpps\n"
        "      --paths N          paths (UDP source ports) per connection (default 16)\n"
        "      --planes N         planes = ports used, 1..%u (default 1)\n"
        "      --mtu N            transport payload bytes per packet (default 4096)\n"
        "      --no-verify        skip the end-of-run data check\n"
        "      --raw              baseline: stream (bw) or ping-pong (lat) bare UDP frames\n"
        "      --no-pdump         do not serve dpdk-dumpcap/dpdk-pdump capture requests\n"
        "      --local ADDR       this node's plane-0 IPv4 (default 10.0.0.1 / 10.0.0.2;\n"
        "                         --backend udp: 127.0.0.1 / 127.0.0.2)\n"
        "      --backend B        dpdk (the EAL's ports, default) or udp (kernel UDP sockets on\n"
        "                         the --local address, plane p at that + p x 256; no port needed)\n"
        "      --timeout SEC      give up after SEC s without progress (default 30)\n"
        "      --udp-csum         compute UDP checksums in software when not offloaded\n"
        "      --tx-copy          copy payloads into mbufs (default: sent in place from the\n"
        "                         registered buffer where the ports take chained mbufs)\n"
        "      --counters         print datapath and transport counters at exit\n"
        "      --min-rto-us N     transport minimum RTO (software links on shared cores: 1000;\n"
        "                         --backend udp: 20000 unless given)\n"
        "      --max-timeouts N   consecutive RTOs of a path before the connection fails\n"
        "      --gateway MAC[,MAC] next-hop router MAC per plane (routed fabric; else on-link)\n"
        "      --plane-log        print plane state changes and per-plane frames at exit\n"
        "      --cross-workers    client with several lcores: worker k dials the server's worker\n"
        "                         k+1 (mod workers), so frames cross queues (tests the hand-off)\n"
        "      --yield-idle       an idle worker yields its CPU (sched_yield): for more busy\n"
        "                         lcores than cores (shared machines, tests)\n"
        "      --inbound-capacity M  receiver rate hints: this node's inbound Mb/s (0: off);\n"
        "                         auto (default): the link speed, off on virtual ports (memif)\n"
        "  Refused, with what to use: -d -i -x -p -b -W --run_infinitely --cpu_util\n"
        "  -h, --help\n",
        prog, dpdk::k_max_planes);
}

std::optional<options> parse_options(int argc, char** argv)
{
    static const option longs[] = {
        {"size", required_argument, nullptr, 's'},
        {"all", no_argument, nullptr, 'a'},
        {"iters", required_argument, nullptr, 'n'},
        {"duration", required_argument, nullptr, 'D'},
        {"qp", required_argument, nullptr, 'q'},
        {"tx-depth", required_argument, nullptr, 't'},
        {"help", no_argument, nullptr, 'h'},
        {"report_gbits", no_argument, nullptr, opt_report_gbits},
        {"out_json", no_argument, nullptr, opt_out_json},
        {"out_json_file", required_argument, nullptr, opt_out_json_file},
        {"output", required_argument, nullptr, opt_output},
        {"no_peak", no_argument, nullptr, 'N'},
        {"CPU-freq", no_argument, nullptr, 'F'},
        {"limit_bw", required_argument, nullptr, 'w'},
        {"limit_msgrate", required_argument, nullptr, 'y'},
        {"report-counters", required_argument, nullptr, 'W'},
        {"ib-dev", required_argument, nullptr, 'd'},
        {"ib-port", required_argument, nullptr, 'i'},
        {"gid-index", required_argument, nullptr, 'x'},
        {"port", required_argument, nullptr, 'p'},
        {"bidirectional", no_argument, nullptr, 'b'},
        {"run_infinitely", no_argument, nullptr, opt_run_infinitely},
        {"cpu_util", no_argument, nullptr, opt_cpu_util},
        {"paths", required_argument, nullptr, opt_paths},
        {"planes", required_argument, nullptr, opt_planes},
        {"no-verify", no_argument, nullptr, opt_no_verify},
        {"raw", no_argument, nullptr, opt_raw},
        {"no-pdump", no_argument, nullptr, opt_no_pdump},
        {"mtu", required_argument, nullptr, opt_mtu},
        {"local", required_argument, nullptr, opt_local},
        {"timeout", required_argument, nullptr, opt_timeout},
        {"udp-csum", no_argument, nullptr, opt_udp_csum},
        {"tx-copy", no_argument, nullptr, opt_tx_copy},
        {"counters", no_argument, nullptr, opt_counters},
        {"min-rto-us", required_argument, nullptr, opt_min_rto},
        {"max-timeouts", required_argument, nullptr, opt_max_timeouts},
        {"gateway", required_argument, nullptr, opt_gateway},
        {"plane-log", no_argument, nullptr, opt_plane_log},
        {"cross-workers", no_argument, nullptr, opt_cross_workers},
        {"yield-idle", no_argument, nullptr, opt_yield_idle},
        {"backend", required_argument, nullptr, opt_backend},
        {"inbound-capacity", required_argument, nullptr, opt_inbound_capacity},
        {nullptr, 0, nullptr, 0},
    };
    options o;
    bool have_test = false;
    bool json = false;
    std::string json_file;
    optind = 0; // 0: glibc re-initialises after the EAL's own getopt pass
    opterr = 0;
    int c;
    // '-' keeps positional arguments in order, so TEST may come anywhere.
    while ((c = getopt_long(argc, argv, "-:s:an:D:q:t:hNFm:w:y:W:d:i:x:p:b", longs, nullptr)) != -1) {
        switch (c) {
        case 1: {
            const std::string_view arg = optarg;
            if (const auto t = engines::parse_test(arg)) {
                if (have_test) {
                    throw std::invalid_argument("two tests given: " + std::string(test_name(o.test)) +
                                                " and " + std::string(arg));
                }
                o.test = *t;
                have_test = true;
                break;
            }
            if (o.client) {
                throw std::invalid_argument("unexpected argument '" + std::string(arg) +
                                            "' (server address already given)");
            }
            if (!dpdk::parse_ipv4(std::string(arg), o.server_addr)) {
                throw std::invalid_argument("'" + std::string(arg) +
                                            "' is neither a test (write_bw, send_bw, read_bw, "
                                            "write_lat, send_lat) nor an IPv4 server address");
            }
            o.client = true;
            break;
        }
        case 's': o.size = parse_uint("-s", optarg, 1, 1ull << 30); break;
        case 'a': o.all_sizes = true; break;
        case 'n': o.iters = parse_uint("-n", optarg, 1, 1ull << 40); break;
        case 'D': o.duration_s = uint32_t(parse_uint("-D", optarg, 1, 3600)); break;
        case 'q': o.qps = uint32_t(parse_uint("-q", optarg, 1, 256)); break;
        case 't': o.tx_depth = uint32_t(parse_uint("-t", optarg, 1, 4096)); break;
        case opt_report_gbits: o.report_gbits = true; break;
        case opt_out_json: json = true; break;
        case opt_out_json_file:
            if (*optarg == '\0') {
                throw std::invalid_argument("--out_json_file: empty file name");
            }
            json = true;
            json_file = optarg;
            break;
        case opt_output: o.output = parse_output(optarg); break;
        case 'N': o.no_peak = true; break;
        case 'F': break; // perftest: ignore CPU frequency warnings; the TSC is calibrated
        case 'm': o.mtu = uint16_t(parse_uint("-m", optarg, 256, 4096)); break;
        case 'w': o.limit_bw = parse_positive("-w/--limit_bw", optarg); break;
        case 'y': o.limit_msgrate = parse_positive("-y/--limit_msgrate", optarg); break;
        case 'd':
            throw std::invalid_argument(
                "-d/--ib-dev: there are no verbs devices; name the DPDK ports with EAL "
                "options before '--' (e.g. --vdev=net_memif0,...), one per plane");
        case 'i':
            throw std::invalid_argument(
                "-i/--ib-port: ports are the EAL's, in order; use --planes N to use N of them");
        case 'x':
            throw std::invalid_argument(
                "-x/--gid-index: the address is an IPv4 node address; use --local ADDR");
        case 'p':
            throw std::invalid_argument(
                "-p/--port: parameters are exchanged in-band over the transport; there is no "
                "TCP port (drop -p)");
        case 'b':
            throw std::invalid_argument(
                "-b/--bidirectional is not supported; run a second server/client pair the "
                "other way");
        case 'W':
            throw std::invalid_argument(
                "-W/--report-counters: use --counters (datapath and transport counters)");
        case opt_run_infinitely:
            throw std::invalid_argument(
                "--run_infinitely is not supported; use -D SEC for a long timed run");
        case opt_cpu_util:
            throw std::invalid_argument(
                "--cpu_util is not measured: the datapath busy-polls one core at 100%");
        case opt_paths: o.paths = uint16_t(parse_uint("--paths", optarg, 1, 256)); break;
        case opt_planes:
            o.planes = uint8_t(parse_uint("--planes", optarg, 1, dpdk::k_max_planes));
            break;
        case opt_mtu: o.mtu = uint16_t(parse_uint("--mtu", optarg, 256, 9000)); break;
        case opt_no_verify: o.verify = false; break;
        case opt_raw: o.raw = true; break;
        case opt_no_pdump: o.pdump = false; break;
        case opt_local:
            if (!dpdk::parse_ipv4(optarg, o.local_addr)) {
                throw std::invalid_argument(std::string("--local: '") + optarg +
                                            "' is not an IPv4 address");
            }
            break;
        case opt_timeout: o.timeout_s = uint32_t(parse_uint("--timeout", optarg, 1, 3600)); break;
        case opt_udp_csum: o.udp_csum_sw = true; break;
        case opt_tx_copy: o.tx_copy = true; break;
        case opt_counters: o.show_counters = true; break;
        case opt_min_rto: o.min_rto_us = uint32_t(parse_uint("--min-rto-us", optarg, 1, 1000000)); break;
        case opt_max_timeouts:
            o.max_timeouts = uint32_t(parse_uint("--max-timeouts", optarg, 1, 1000));
            break;
        case opt_gateway: o.gateways = parse_gateways(optarg); break;
        case opt_plane_log: o.plane_log = true; break;
        case opt_cross_workers: o.cross_workers = true; break;
        case opt_yield_idle: o.yield_idle = true; break;
        case opt_inbound_capacity:
            if (std::string(optarg) != "auto") {
                o.inbound_capacity_mbps = parse_uint("--inbound-capacity", optarg, 0, 100'000'000);
            }
            break;
        case opt_backend:
            if (std::string(optarg) == "dpdk") {
                o.backend = backend_kind::dpdk;
            } else if (std::string(optarg) == "udp") {
                o.backend = backend_kind::udp;
            } else {
                throw std::invalid_argument(std::string("--backend: '") + optarg + "': dpdk or udp");
            }
            break;
        case 'h': print_usage(argv[0]); return std::nullopt;
        case ':':
            throw std::invalid_argument(std::string("option ") + argv[optind - 1] +
                                        " needs a value");
        default:
            throw std::invalid_argument(std::string("unknown option '") + argv[optind - 1] +
                                        "' (see --help)");
        }
    }
    if (!have_test) {
        throw std::invalid_argument(
            "no test given: write_bw, send_bw, read_bw, write_lat or send_lat");
    }
    if (o.size == 0) {
        o.size = o.is_bw() ? 65536 : 2;
    }
    if (o.iters == 0) {
        o.iters = o.is_bw() ? 5000 : 1000;
    }
    if (o.tx_depth == 0) {
        o.tx_depth = o.is_bw() ? 128 : 1;
    }
    if (o.local_addr == 0) {
        const uint32_t net = o.backend == backend_kind::udp ? 0x7f000000u : 0x0a000000u;
        o.local_addr = net | (o.client ? 2u : 1u);
    }
    if (o.client && o.server_addr == o.local_addr) {
        throw std::invalid_argument("the server address equals this node's address " +
                                    dpdk::format_ipv4(o.local_addr) + " (use --local)");
    }
    if (!o.gateways.empty() && o.gateways.size() != o.planes) {
        throw std::invalid_argument("--gateway names " + std::to_string(o.gateways.size()) +
                                    " MAC(s) for " + std::to_string(o.planes) +
                                    " plane(s): give one per plane, in plane order");
    }
    if (json) {
        o.out_json = json_file.empty() ? k_default_json_file : json_file;
    }
    if (o.output == output_kind::latency && o.is_bw()) {
        throw std::invalid_argument("--output=latency needs a latency test (write_lat, send_lat)");
    }
    if (o.output != output_kind::latency && o.output != output_kind::full && !o.is_bw()) {
        throw std::invalid_argument("--output=bandwidth|message_rate needs a bandwidth test");
    }
    if ((o.limit_bw > 0 || o.limit_msgrate > 0) && !o.is_bw()) {
        throw std::invalid_argument("-w/-y limit a bandwidth test's results");
    }
    if (o.raw && o.qps != 1) {
        throw std::invalid_argument("--raw runs one stream; drop -q");
    }
    return o;
}

} // namespace metaroce::perf
