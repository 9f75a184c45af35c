#include "report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace metaroce::perf {

namespace {
constexpr const char* k_dashes =
    "---------------------------------------------------------------------------------------";

void print_address(const char* who, const address_line& a)
{
    std::printf(" %s address: LID 0000 QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016llx\n", who,
                a.conn, a.psn & 0xffffff, a.rkey, static_cast<unsigned long long>(a.va));
    std::printf(" GID: %s\n", gid_of(a.ip).c_str());
}
} // namespace

std::string gid_of(uint32_t ip)
{
    char s[80];
    std::snprintf(s, sizeof s, "00:00:00:00:00:00:00:00:00:00:255:255:%02u:%02u:%02u:%02u",
                  (ip >> 24) & 0xff, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
    return s;
}

void print_dashes()
{
    std::printf("%s\n", k_dashes);
}

void print_header(const options& o, const run_info& info)
{
    print_dashes();
    std::printf("                    %s%s\n", test_title(o.test), o.raw ? " (raw frames)" : "");
    std::printf(" Dual-port       : OFF\t\tDevice         : %s\n", info.device.c_str());
    std::printf(" Number of qps   : %u\t\tTransport type : %s\n", o.qps, info.transport.c_str());
    std::printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
    std::printf(" PCIe relax order: OFF\n");
    std::printf(" TX depth        : %u\n", o.tx_depth);
    std::printf(" CQ Moderation   : 1\n");
    std::printf(" Mtu             : %u[B]\n", o.mtu);
    std::printf(" Link type       : Ethernet\n");
    std::printf(" GID index       : 0\n");
    std::printf(" Max inline data : 0[B]\n");
    std::printf(" rdma_cm QPs\t : OFF\n");
    std::printf(" Data ex. method : in-band\n");
    std::printf(" Planes          : %u\t\tPaths per QP   : %u\n", info.planes, info.paths);
    print_dashes();
}

void print_addresses(const address_line& local, const address_line& remote)
{
    print_address("local", local);
    print_address("remote", remote);
    print_dashes();
}

void print_bw_title(const options& o)
{
    const char* unit = o.report_gbits ? "Gb/sec" : "MB/sec";
    std::printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", unit,
                unit);
}

void print_bw_row(const bw_result& r)
{
    std::printf(" %-7llu    %-10llu       %-7.2f            %-7.2f\t\t   %-7.6f\n",
                static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.iters),
                r.peak, r.avg, r.msg_rate_mpps);
    std::fflush(stdout);
}

void print_lat_title()
{
    std::printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
                "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
}

void print_lat_row(const lat_result& r)
{
    std::printf(" %-7llu %-10llu   %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t"
                "%-7.2f  \t\t%-7.2f   \n",
                static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.iters),
                r.t_min, r.t_max, r.t_typical, r.t_avg, r.t_stdev, r.p99, r.p999);
    std::fflush(stdout);
}

lat_result summarise_latency(uint64_t bytes, std::vector<double> s)
{
    lat_result r;
    r.bytes = bytes;
    r.iters = s.size();
    if (s.empty()) {
        return r;
    }
    std::sort(s.begin(), s.end());
    const auto at = [&](double q) {
        size_t i = size_t(std::ceil(q * double(s.size()))) ;
        return s[std::min(s.size() - 1, i == 0 ? 0 : i - 1)];
    };
    r.t_min = s.front();
    r.t_max = s.back();
    r.t_typical = s[s.size() / 2];
    double sum = 0;
    for (double v : s) {
        sum += v;
    }
    r.t_avg = sum / double(s.size());
    double var = 0;
    for (double v : s) {
        var += (v - r.t_avg) * (v - r.t_avg);
    }
    r.t_stdev = std::sqrt(var / double(s.size()));
    r.p99 = at(0.99);
    r.p999 = at(0.999);
    return r;
}

namespace {
double to_unit(const options& o, double bytes_per_s)
{
    return o.report_gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / (1 << 20);
}
} // namespace

bw_timing::bw_timing(uint64_t start, uint64_t max_outstanding)
    : start_ns(start), last_ns(start), outstanding(std::max<uint64_t>(1, max_outstanding))
{
    points.reserve(k_max_points);
    points.push_back({0, start});
}

void bw_timing::completed(uint64_t now_ns, uint64_t messages)
{
    last_ns = now_ns;
    completed_msgs += messages;
    if (points.size() >= k_max_points) {
        // Any two logged points still bound a valid window: keep every other one.
        size_t w = 0;
        for (size_t r = 0; r < points.size(); r += 2) {
            points[w++] = points[r];
        }
        points.resize(w);
    }
    points.push_back({completed_msgs, now_ns});
}

double bw_timing::peak_msgs_per_s() const
{
    double best = 0;
    for (size_t i = 0; i < points.size(); ++i) {
        for (size_t j = i + 1; j < points.size(); ++j) {
            const uint64_t n = points[j].count - points[i].count;
            const uint64_t dt = points[j].ns - points[i].ns;
            if (n <= outstanding || dt == 0) {
                continue;
            }
            best = std::max(best, double(n - outstanding) * 1e9 / double(dt));
        }
    }
    return best;
}

bw_result bw_row(const options& o, uint64_t size, uint64_t iters, uint64_t elapsed_ns, double peak)
{
    bw_result r;
    r.bytes = size;
    r.iters = iters;
    r.seconds = double(elapsed_ns) / 1e9;
    r.avg = to_unit(o, r.seconds > 0 ? double(size) * double(iters) / r.seconds : 0);
    r.peak = peak;
    r.msg_rate_mpps = r.seconds > 0 ? double(iters) / r.seconds / 1e6 : 0;
    return r;
}

bw_result bw_row(const options& o, uint64_t size, uint64_t iters, const bw_timing& t)
{
    const uint64_t elapsed = t.last_ns - t.start_ns;
    const double avg_bps = elapsed > 0 ? double(size) * double(iters) * 1e9 / double(elapsed) : 0;
    // The average is itself a window (start to last completion) that no wire can beat.
    const double peak_bps = std::max(avg_bps, double(size) * t.peak_msgs_per_s());
    bw_result r = bw_row(o, size, iters, elapsed, o.no_peak ? 0 : to_unit(o, peak_bps));
    if (!o.no_peak) {
        r.peak = std::max(r.peak, r.avg); // the same bound in r.avg's own rounding (one window: equal)
    }
    return r;
}

void print_bw_number(const options& o, const bw_result& r)
{
    std::printf("%lf\n", o.output == output_kind::message_rate ? r.msg_rate_mpps : r.avg);
    std::fflush(stdout);
}

void print_lat_number(const lat_result& r)
{
    std::printf("%lf\n", r.t_typical);
    std::fflush(stdout);
}

void print_verification(const options& o, bool checked, uint64_t bad_bytes)
{
    if (!checked) {
        return;
    }
    if (bad_bytes == 0) {
        if (o.output == output_kind::full) {
            std::printf(" Data verification: ok\n");
        }
    } else {
        std::fprintf(o.output == output_kind::full ? stdout : stderr,
                     " Data verification: FAILED (%llu bytes differ)\n",
                     static_cast<unsigned long long>(bad_bytes));
    }
    std::fflush(stdout);
}

bool check_limits(const options& o, const std::vector<bw_result>& rows)
{
    bool ok = true;
    for (const auto& r : rows) {
        if (o.limit_bw > 0 && r.avg < o.limit_bw) {
            std::fprintf(stderr, "size %llu: BW average %.2f is below the limit %.2f (-w)\n",
                         static_cast<unsigned long long>(r.bytes), r.avg, o.limit_bw);
            ok = false;
        }
        if (o.limit_msgrate > 0 && r.msg_rate_mpps < o.limit_msgrate) {
            std::fprintf(stderr, "size %llu: MsgRate %.6f Mpps is below the limit %.6f (-y)\n",
                         static_cast<unsigned long long>(r.bytes), r.msg_rate_mpps,
                         o.limit_msgrate);
            ok = false;
        }
    }
    if (ok && (o.limit_bw > 0 || o.limit_msgrate > 0)) {
        std::printf(" Limits: passed\n");
    }
    return ok;
}

bool write_json(const std::string& path, const options& o, const run_info& info,
                const std::vector<bw_result>& bw, const std::vector<lat_result>& lat,
                bool verified, const std::string& verify_state)
{
    using nlohmann::json;
    // perftest's layout: a test_info object (the header block) and a results object (the
    // row). With -a there is one row per size and results is an array of such objects.
    json t;
    t["test"] = test_title(o.test);
    t["role"] = o.client ? "client" : "server";
    t["Dual_port"] = "OFF";
    t["Device"] = info.device;
    t["Number_of_qps"] = o.qps;
    t["Transport_type"] = info.transport;
    t["Connection_type"] = "RC";
    t["Using_SRQ"] = "OFF";
    t["TX_depth"] = o.tx_depth;
    t["CQ_Moderation"] = 1;
    t["Mtu"] = o.mtu;
    t["Link_type"] = "Ethernet";
    t["GID_index"] = 0;
    t["Max_inline_data"] = 0;
    t["rdma_cm_QPs"] = "OFF";
    t["Data_ex_method"] = "in-band";
    t["Planes"] = info.planes;
    t["Paths_per_QP"] = info.paths;
    t["Raw_frames"] = o.raw;
    t["Data_verification"] = verify_state;
    t["Data_verified"] = verified;
    if (o.is_bw()) {
        t["BW_unit"] = o.report_gbits ? "Gb/sec" : "MB/sec";
    } else {
        t["Lat_unit"] = "usec";
    }
    json rows = json::array();
    for (const auto& r : bw) {
        rows.push_back({{"MsgSize", r.bytes},
                        {"n_iterations", r.iters},
                        {"BW_peak", r.peak},
                        {"BW_average", r.avg},
                        {"MsgRate", r.msg_rate_mpps}});
    }
    for (const auto& r : lat) {
        if (!o.client) {
            // The latency samples are the client's (its echoes); the server has none.
            rows.push_back({{"MsgSize", r.bytes}, {"n_iterations", r.iters}});
            continue;
        }
        rows.push_back({{"MsgSize", r.bytes},
                        {"n_iterations", r.iters},
                        {"t_min", r.t_min},
                        {"t_max", r.t_max},
                        {"t_typical", r.t_typical},
                        {"t_avg", r.t_avg},
                        {"t_stdev", r.t_stdev},
                        {"percentile_99", r.p99},
                        {"percentile_99.9", r.p999}});
    }
    json j;
    j["test_info"] = t;
    j["results"] = rows.size() == 1 ? rows[0] : rows;
    std::ofstream f(path);
    if (!f) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return false;
    }
    f << j.dump(2) << "\n";
    return bool(f);
}

} // namespace metaroce::perf
