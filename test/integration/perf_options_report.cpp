// metaroce-perf's perftest compatibility without ports: flag parsing (perftest's
// --out_json / --out_json_file, accepted and rejected flags), perftest's JSON layout, the
// GID text and the bandwidth peak's definition.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "options.hpp"
#include "report.hpp"

using namespace metaroce::perf;

namespace {

options parse(std::vector<std::string> args)
{
    args.insert(args.begin(), "metaroce-perf");
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    auto o = parse_options(int(args.size()), argv.data());
    REQUIRE(o.has_value());
    return *o;
}

std::string parse_error(std::vector<std::string> args)
{
    try {
        parse(std::move(args));
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("--out_json is a flag: it never swallows the server address")
{
    const options o = parse({"write_bw", "--out_json", "10.0.0.1"});
    CHECK(o.client);
    CHECK(o.server_addr == 0x0a000001u);
    CHECK(o.out_json == "perftest_out.json");
    CHECK(parse({"write_bw"}).out_json.empty());
}

TEST_CASE("--out_json_file=F names the file")
{
    CHECK(parse({"write_bw", "--out_json", "--out_json_file=/tmp/r.json"}).out_json ==
          "/tmp/r.json");
    CHECK(parse({"write_lat", "--out_json_file", "r.json", "10.0.0.1"}).out_json == "r.json");
    CHECK(parse_error({"write_bw", "--out_json_file="}).find("empty") != std::string::npos);
}

TEST_CASE("perftest flags that map are acted on")
{
    const options o = parse({"write_bw", "-m", "1024", "-N", "-F", "-w", "10", "-y", "0.5",
                             "--output=message_rate"});
    CHECK(o.mtu == 1024);
    CHECK(o.no_peak);
    CHECK(o.limit_bw == 10);
    CHECK(o.limit_msgrate == 0.5);
    CHECK(o.output == output_kind::message_rate);
    CHECK(parse({"send_lat", "--output=latency"}).output == output_kind::latency);
    CHECK(parse_error({"write_bw", "--output=latency"}).find("latency test") != std::string::npos);
    CHECK(parse_error({"write_lat", "--output=bandwidth"}).find("bandwidth test") !=
          std::string::npos);
    CHECK(parse_error({"write_bw", "--output=fast"}).find("message_rate") != std::string::npos);
    CHECK(parse_error({"write_bw", "-m", "100"}).find("out of range") != std::string::npos);
}

TEST_CASE("perftest flags that do not map are rejected with what to use")
{
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"write_bw", "-d", "mlx5_0"}, "--vdev"},
        {{"write_bw", "-i", "1"}, "--planes"},
        {{"write_bw", "-x", "3"}, "--local"},
        {{"write_bw", "-p", "18515"}, "in-band"},
        {{"write_bw", "-b"}, "second server/client pair"},
        {{"write_bw", "--run_infinitely"}, "-D SEC"},
        {{"write_bw", "--cpu_util"}, "busy-polls"},
        {{"write_bw", "-W", "x"}, "--counters"},
    };
    for (const auto& [args, hint] : cases) {
        INFO(args[1]);
        CHECK(parse_error(args).find(hint) != std::string::npos);
    }
}

TEST_CASE("GIDs print perftest's two-digit bytes")
{
    CHECK(gid_of(0x0a000002u) == "00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:02");
}

TEST_CASE("JSON has perftest's test_info and results with its field names")
{
    options o = parse({"write_bw", "--out_json_file=/tmp/metaroce-perf-json-test.json"});
    run_info info;
    info.device = "net_memif0";
    bw_result r;
    r.bytes = 65536;
    r.iters = 500;
    r.peak = 2;
    r.avg = 1;
    r.msg_rate_mpps = 0.25;
    REQUIRE(write_json(o.out_json, o, info, {r}, {}, true, "ok"));
    std::ifstream f(o.out_json);
    const auto j = nlohmann::json::parse(f); // throws on invalid JSON
    std::remove(o.out_json.c_str());
    REQUIRE(j.contains("test_info"));
    CHECK(j["test_info"]["Device"] == "net_memif0");
    const auto& res = j["results"];
    CHECK(res["MsgSize"] == 65536);
    CHECK(res["n_iterations"] == 500);
    CHECK(res["BW_peak"] == 2.0);
    CHECK(res["BW_average"] == 1.0);
    CHECK(res["MsgRate"] == 0.25);

    options l = parse({"write_lat", "--out_json_file=/tmp/metaroce-perf-json-lat.json", "10.0.0.1"});
    const lat_result lr = summarise_latency(2, {1.0, 2.0, 3.0});
    REQUIRE(write_json(l.out_json, l, info, {}, {lr}, true, "ok"));
    std::ifstream g(l.out_json);
    const auto k = nlohmann::json::parse(g);
    std::remove(l.out_json.c_str());
    for (const char* key : {"MsgSize", "n_iterations", "t_min", "t_max", "t_typical", "t_avg",
                            "t_stdev", "percentile_99", "percentile_99.9"}) {
        INFO(key);
        CHECK(k["results"].contains(key));
    }
    CHECK(k["results"]["t_max"] == 3.0);
}

TEST_CASE("the BW peak counts only messages posted inside its window")
{
    // Depth 4; 100 messages of 1000 B, one completion per 1 us (1 GB/s), except that the
    // completions arrive in bursts of 4 at the same instant (ACK batching): the old 1 ms
    // bin peak and a naive completions/time both overstate this; the bound must not.
    options o = parse({"write_bw", "-s", "1000"});
    bw_timing t(0, 4);
    for (uint64_t i = 1; i <= 100; ++i) {
        t.completed(((i + 3) / 4) * 4 * 1000, 1);
    }
    const double peak_msgs = t.peak_msgs_per_s();
    CHECK(peak_msgs > 0);
    CHECK(peak_msgs <= 1e6 * 1.0001); // never above the true 1 M msgs/s
    const bw_result r = bw_row(o, 1000, 100, t);
    CHECK(r.peak >= r.avg);
    CHECK(r.peak <= 1e9 / (1 << 20) * 1.0001); // 1 GB/s in MB/sec
    o.no_peak = true;
    CHECK(bw_row(o, 1000, 100, t).peak == 0);
}
