// The prompt's application control, what a program on this node would do through
// verbs: regions, work requests and their completions. The conformance runner drives
// the app with these.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "app.hpp"
#include "commands.hpp"

namespace metaroce::app {

namespace {

uint32_t parse_access(const std::string& s)
{
    if (s == "none") {
        return 0;
    }
    uint32_t a = 0;
    std::istringstream in(s);
    for (std::string w; std::getline(in, w, ',');) {
        if (w == "local_write") {
            a |= access::local_write;
        } else if (w == "remote_write") {
            a |= access::remote_write;
        } else if (w == "remote_read") {
            a |= access::remote_read;
        } else {
            throw std::invalid_argument("unknown access '" + w + "' (local_write, remote_write, remote_read)");
        }
    }
    return a;
}

bool parse_wr_opcode(const std::string& s, wr_opcode& op)
{
    const std::pair<const char*, wr_opcode> names[] = {{"write", wr_opcode::write},
                                                       {"write_imm", wr_opcode::write_imm},
                                                       {"send", wr_opcode::send},
                                                       {"send_imm", wr_opcode::send_imm},
                                                       {"read", wr_opcode::read}};
    for (const auto& [n, o] : names) {
        if (s == n) {
            op = o;
            return true;
        }
    }
    return false;
}

// Identifiers (as in verbs), one word each, so scripts can parse the lines.
const char* wc_status_name(wc_status st)
{
    static const char* const names[] = {"success",         "loc_len_err",       "loc_prot_err",
                                        "wr_flush_err",    "rem_access_err",    "rem_inv_req_err",
                                        "rnr_retry_exc_err", "retry_exc_err",   "rem_op_err"};
    return size_t(st) < std::size(names) ? names[size_t(st)] : "?";
}

const char* post_result_name(post_result r)
{
    static const char* const names[] = {"ok",         "no_such_conn", "conn_not_usable",
                                        "queue_full", "bad_stream",   "bad_lkey",
                                        "bad_access", "out_of_bounds", "too_long"};
    return size_t(r) < std::size(names) ? names[size_t(r)] : "?";
}

const char* wc_opcode_name(wc_opcode op)
{
    switch (op) {
    case wc_opcode::write: return "write";
    case wc_opcode::send: return "send";
    case wc_opcode::read: return "read";
    case wc_opcode::recv: return "recv";
    case wc_opcode::recv_rdma_with_imm: return "recv_rdma_with_imm";
    }
    return "?";
}

} // namespace

const application::user_mr& application::user_region(uint32_t lkey) const
{
    for (const user_mr& u : user_mrs_) {
        for (const memory_region& m : u.lanes) {
            if (m.lkey == lkey) {
                return u;
            }
        }
    }
    throw std::invalid_argument("no region with lkey " + std::to_string(lkey) + " (see 'mr reg')");
}

// A region is registered with every lane's endpoint (and its worker's zero-copy TX),
// each through the lane's own mailbox: a connection on any worker can use it.
void application::mr_reg(const args& a)
{
    if (a.size() != 4) {
        usage_error("mr reg <len> none|<access>[,<access>...]", "see 'help' for the mr commands");
    }
    const uint64_t len = parse_number(a[2], "length");
    const uint32_t acc = parse_access(a[3]);
    if (len == 0 || len > (1ull << 30)) {
        throw std::invalid_argument("length must be 1..2^30");
    }
    user_mr u;
    u.buf = dpdk::eal_buffer("mr_user", len, -1);
    for (auto& l : lanes_) {
        std::optional<memory_region> mr;
        l->call([&] {
            mr = l->w().ep().memory().register_region(u.buf.data(), len, acc);
            if (mr) {
                l->w().mem_added(u.buf.data(), len); // frames may be sent from it in place
            }
        });
        if (!mr) {
            for (size_t k = 0; k < u.lanes.size(); ++k) { // all lanes or none
                datapath& d = *lanes_[k];
                d.call([&] {
                    d.w().ep().memory().deregister(u.lanes[k].lkey);
                    try {
                        d.w().mem_removed(u.buf.data()); // nothing was sent from it yet
                    } catch (const std::exception&) {
                    }
                });
            }
            std::printf("mr: the region table is full%s\n",
                        lanes_.size() > 1 ? (" (worker " + std::to_string(l->index()) + ")").c_str() : "");
            return;
        }
        u.lanes.push_back(*mr);
    }
    u.mr = u.lanes[0];
    // Several workers: each one's keys, then the usual line (worker 0's), last.
    for (size_t k = 1; k < u.lanes.size(); ++k) {
        std::printf("mr worker %zu: lkey 0x%x rkey 0x%x\n", k, u.lanes[k].lkey, u.lanes[k].rkey);
    }
    std::printf("mr registered: lkey 0x%x rkey 0x%x va 0x%llx len %llu\n", u.mr.lkey, u.mr.rkey,
                (unsigned long long)u.mr.va, (unsigned long long)len);
    user_mrs_.push_back(std::move(u));
}

void application::mr_dereg(const args& a)
{
    if (a.size() != 3) {
        usage_error("mr dereg <lkey>", "see 'help' for the mr commands");
    }
    const user_mr& u = user_region(uint32_t(parse_number(a[2], "lkey")));
    bool ok = true;
    std::string held;
    for (size_t k = 0; k < lanes_.size() && k < u.lanes.size(); ++k) {
        datapath& d = *lanes_[k];
        d.call([&] {
            ok = d.w().ep().memory().deregister(u.lanes[k].lkey) && ok;
            try {
                d.w().mem_removed(u.mr.host); // waits for frames sent from it in place
            } catch (const std::exception& e) {
                held += (held.empty() ? "" : "; ") + std::string(e.what());
            }
        });
    }
    std::printf("mr %s: lkey 0x%x%s%s\n", ok ? "deregistered" : "not registered", u.mr.lkey,
                held.empty() ? "" : "; ", held.c_str());
}

void application::mr_load(const args& a)
{
    if (a.size() != 5) {
        usage_error("mr load <lkey> <offset> <file>", "see 'help' for the mr commands");
    }
    const memory_region& mr = user_region(uint32_t(parse_number(a[2], "lkey"))).mr;
    const uint64_t off = parse_number(a[3], "offset");
    std::ifstream f(a[4], std::ios::binary);
    if (!f) {
        throw std::invalid_argument("cannot read " + a[4]);
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (off > mr.length || bytes.size() > mr.length - off) {
        throw std::invalid_argument("the file does not fit in the region at that offset");
    }
    dp_->call([&] { std::copy(bytes.begin(), bytes.end(), mr.host + off); });
    std::printf("mr loaded: %zu bytes\n", bytes.size());
}

void application::mr_read(const args& a)
{
    if (a.size() != 5) {
        usage_error("mr read <lkey> <offset> <len>", "see 'help' for the mr commands");
    }
    const memory_region& mr = user_region(uint32_t(parse_number(a[2], "lkey"))).mr;
    const uint64_t off = parse_number(a[3], "offset");
    const uint64_t len = parse_number(a[4], "length");
    if (off > mr.length || len > mr.length - off) {
        throw std::invalid_argument("the range is outside the region");
    }
    std::string hex(2 * len, '0');
    dp_->call([&] {
        static const char* k = "0123456789abcdef";
        for (uint64_t i = 0; i < len; ++i) {
            hex[2 * i] = k[mr.host[off + i] >> 4];
            hex[2 * i + 1] = k[mr.host[off + i] & 15];
        }
    });
    std::printf("mr data: %s\n", hex.c_str());
}

namespace {
void print_posted(post_result r)
{
    std::printf("post: %s (%s)\n", post_result_name(r), std::string(to_string(r)).c_str());
}
} // namespace

datapath& application::verbs_lane(conn_id c)
{
    datapath* l = lanes_.size() > 1 ? lane_of(c) : nullptr;
    return l != nullptr ? *l : *dp_;
}

void application::post_recv(const args& a)
{
    if (a.size() != 8) {
        usage_error("post recv <conn> <stream> <lkey> <offset> <len> <wr_id>", "see 'help' for the arguments");
    }
    const conn_id c = conn_id(parse_number(a[2], "connection id"));
    datapath& d = verbs_lane(c);
    const uint16_t stream = uint16_t(parse_number(a[3], "stream"));
    const memory_region& mr = user_region(uint32_t(parse_number(a[4], "lkey"))).lanes.at(d.index());
    recv_wr wr;
    wr.local = sge{mr.va + parse_number(a[5], "offset"), uint32_t(parse_number(a[6], "length")), mr.lkey};
    wr.wr_id = datapath::user_wr_id(parse_number(a[7], "wr_id"));
    post_result r = post_result::ok;
    d.call([&] { r = d.w().ep().post_recv(c, stream, wr); });
    print_posted(r);
}

void application::post_send(const args& a)
{
    if (a.size() != 12 && !(a.size() == 13 && a[12] == "unsignaled")) {
        usage_error("post send <conn> <op> <stream> <lkey> <offset> <len> <remote_va> <rkey> <imm> <wr_id> "
                    "[unsignaled]",
                    "see 'help' for the arguments");
    }
    const conn_id c = conn_id(parse_number(a[2], "connection id"));
    datapath& d = verbs_lane(c);
    send_wr wr;
    if (!parse_wr_opcode(a[3], wr.op)) {
        throw std::invalid_argument("unknown opcode '" + a[3] + "'");
    }
    wr.stream = uint16_t(parse_number(a[4], "stream"));
    const memory_region& mr = user_region(uint32_t(parse_number(a[5], "lkey"))).lanes.at(d.index());
    wr.local = sge{mr.va + parse_number(a[6], "offset"), uint32_t(parse_number(a[7], "length")), mr.lkey};
    wr.remote_va = parse_number(a[8], "remote_va");
    wr.rkey = uint32_t(parse_number(a[9], "rkey"));
    wr.imm = uint32_t(parse_number(a[10], "imm"));
    wr.wr_id = datapath::user_wr_id(parse_number(a[11], "wr_id"));
    wr.signaled = a.size() == 12;
    post_result r = post_result::ok;
    d.call([&] { r = d.w().ep().post_send(c, wr, d.now_ns()); });
    print_posted(r);
}

void application::show_cq(const args& a)
{
    if (a.size() != 2) {
        usage_error("show cq", "no arguments expected");
    }
    std::vector<completion> cq; // every lane's ("post" acts on the connection's lane)
    for (auto& l : lanes_) {
        std::vector<completion> more;
        l->call([&] { more = l->take_user_completions(); });
        cq.insert(cq.end(), more.begin(), more.end());
    }
    for (const completion& w : cq) {
        std::printf("wc %llu conn %u stream %u status %s op %s len %u imm %s\n", (unsigned long long)w.wr_id,
                    w.conn, w.stream, wc_status_name(w.status), wc_opcode_name(w.op), w.byte_len,
                    w.has_imm ? std::to_string(w.imm).c_str() : "-");
    }
    std::printf("cq: %zu completions\n", cq.size());
}

} // namespace metaroce::app
