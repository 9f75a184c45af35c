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

std::string gid_of(uint32_t ip)
{
    char s[80];
    std::snprintf(s, sizeof s, "00:00:00:00:00:00:00:00:00:00:255:255:%03u:%03u:%03u:%03u",
                  (ip >> 24) & 0xff, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
    return s;
}

void print_address(const char* who, const address_line& a)
{
    std::printf(" %s address: LID 0000 QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016llx\n", who,
                a.conn, a.psn & 0xffffff, a.rkey, static_cast<unsigned long long>(a.va));
    std::printf(" GID: %s\n", gid_of(a.ip).c_str());
}
} // namespace

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

void bw_timing::completed(uint64_t now_ns, uint64_t bytes)
{
    last_ns = now_ns;
    const uint64_t bin = (now_ns - start_ns) / k_bin_ns;
    if (bin >= bins.size()) {
        bins.resize(bin + 1, 0);
    }
    bins[bin] += bytes;
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
    double peak_bps = avg_bps;
    for (uint64_t b = 0; b < elapsed / bw_timing::k_bin_ns && b < t.bins.size(); ++b) {
        peak_bps = std::max(peak_bps, double(t.bins[b]) * 1e9 / double(bw_timing::k_bin_ns));
    }
    return bw_row(o, size, iters, elapsed, to_unit(o, peak_bps));
}

bool write_json(const std::string& path, const options& o, const run_info& info,
                const std::vector<bw_result>& bw, const std::vector<lat_result>& lat,
                bool verified, const std::string& verify_state)
{
    nlohmann::json j;
    j["test"] = test_name(o.test);
    j["raw"] = o.raw;
    j["role"] = o.client ? "client" : "server";
    j["device"] = info.device;
    j["transport"] = info.transport;
    j["qps"] = o.qps;
    j["tx_depth"] = o.tx_depth;
    j["mtu"] = o.mtu;
    j["planes"] = info.planes;
    j["paths"] = info.paths;
    j["verified"] = verified;
    j["verify"] = verify_state;
    const char* unit = o.report_gbits ? "Gb/sec" : "MB/sec";
    j["bw_unit"] = unit;
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : bw) {
        rows.push_back({{"#bytes", r.bytes},
                        {"#iterations", r.iters},
                        {std::string("BW peak[") + unit + "]", r.peak},
                        {std::string("BW average[") + unit + "]", r.avg},
                        {"MsgRate[Mpps]", r.msg_rate_mpps},
                        {"seconds", r.seconds}});
    }
    for (const auto& r : lat) {
        rows.push_back({{"#bytes", r.bytes},
                        {"#iterations", r.iters},
                        {"t_min[usec]", r.t_min},
                        {"t_max[usec]", r.t_max},
                        {"t_typical[usec]", r.t_typical},
                        {"t_avg[usec]", r.t_avg},
                        {"t_stdev[usec]", r.t_stdev},
                        {"99% percentile[usec]", r.p99},
                        {"99.9% percentile[usec]", r.p999}});
    }
    j["results"] = rows;
    std::ofstream f(path);
    if (!f) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return false;
    }
    f << j.dump(2) << "\n";
    return bool(f);
}

} // namespace metaroce::perf
