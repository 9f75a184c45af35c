// Planes (spec 5.9, 7.2): where paths start, and how they leave a plane that goes
// down (by the operator or detected dead) and come back. Needs a target with two planes.
#include <map>

#include "helpers.hpp"

namespace metaroce::conformance {

namespace {

void need_planes(ctx& x)
{
    if (x.t.caps().planes < 2) {
        x.na("the target has a single plane");
    }
}

tconn& two_planes(ctx& x, bool manual)
{
    offer o;
    o.planes = 2;
    o.paths = 4;
    tconn& c = x.p.connect(o);
    x.check(c.planes == 2, "the IUT did not agree to 2 planes");
    if (manual) {
        x.p.manual_acks(c);
    }
    return c;
}

// The tester's own record of what it accepted (it may drop packets on purpose).
struct receiver {
    std::map<uint8_t, rx_path> got;
    void ack(ctx& x, tconn& c, const rx_pkt& k, uint8_t plane)
    {
        auto it = got.find(k.v().path);
        if (it == got.end()) {
            it = got.emplace(k.v().path, rx_path{c.iut_isn, {}, 0}).first;
        }
        it->second.record(k.v().psn);
        x.p.send(x.p.ack_pkt(c, k.v().path, it->second.expected, it->second.bits, k.v().tx_ts, 1, 0),
                 {c.addr, plane, c.sport(k.v().path), false});
    }
};

} // namespace

CONFORMANCE_TEST(paths_start_on_their_home_plane, "5.9", "7.2")
{
    need_planes(x);
    tconn& c = two_planes(x, false);
    const region src = src_region(x, 8192, 60);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 8192, 600));
    for (const rx_pkt& k : new_packets(x, c, x.p.reply_ns(), 8)) {
        x.check(k.d->plane == k.v().path % 2, "path " + std::to_string(k.v().path) + " sent on plane " +
                                                  std::to_string(k.d->plane) + ", not its home plane");
        x.check(k.v().plane == k.d->plane, "BTH.plane does not say the plane the packet was put on");
    }
    x.check(x.wait_wc(600, x.p.reply_ns()).status == wc_status::success, "the WRITE failed");
}

CONFORMANCE_TEST(plane_taken_down_moves_its_paths_at_once, "5.9")
{
    need_planes(x);
    if (!x.t.caps().plane_admin) {
        x.na("the target cannot take a plane down");
    }
    tconn& c = two_planes(x, true);
    const region src = src_region(x, 64 * 1024, 61);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 64 * 1024, 610));
    const std::vector<rx_pkt> b1 = new_packets(x, c, x.p.burst_ns());
    std::map<uint8_t, uint16_t> old_port;
    size_t on_plane1 = 0;
    for (const rx_pkt& k : b1) {
        old_port[k.v().path] = k.d->udp_sport;
        on_plane1 += k.d->plane == 1;
    }
    x.check(on_plane1 > 0, "nothing was on plane 1 to move");
    const uint64_t t_down = x.t.now_ns();
    x.t.set_plane(1, false);
    const auto resent = x.p.collect([&](const rx_pkt& k) { return tester::data_for(c)(k) && is_retx(k); },
                                    x.p.burst_ns());
    size_t moved = 0;
    for (const rx_pkt& k : resent) {
        x.check(k.d->plane == 0, "a packet was resent on the plane that went down");
        if (k.v().path % 2 == 1) {
            ++moved;
            x.check(k.d->udp_sport != old_port[k.v().path], "a displaced path kept its UDP source port");
            if (x.exact()) {
                x.check(k.d->at_ns == t_down, "the displaced packets were resent only after a wait");
            }
        }
    }
    x.check(moved == on_plane1, std::to_string(moved) + " of the " + std::to_string(on_plane1) +
                                    " packets on the downed plane were resent on the other");
    // Back up: the paths of plane 1 return to it, on yet another UDP source port.
    receiver rcv;
    for (const rx_pkt& k : b1) {
        rcv.ack(x, c, k, 0);
    }
    x.t.set_plane(1, true);
    bool back = false;
    for (int i = 0; i < 64 && !back && !x.completed(610); ++i) {
        const auto k = x.p.expect(tester::data_for(c), x.p.reply_ns());
        if (!k) {
            break;
        }
        rcv.ack(x, c, *k, k->d->plane);
        if (!is_retx(*k) && k->v().path % 2 == 1 && k->d->plane == 1) {
            back = true;
            x.check(k->d->udp_sport != old_port[k->v().path], "a path came back on its old UDP source port");
        }
    }
    x.check(back, "no path returned to plane 1 after it came back up");
    c.auto_ack = true;
    x.check(x.wait_wc(610, 20 * x.p.reply_ns()).status == wc_status::success,
            "the WRITE failed: plane changes must not be visible to the application");
}

CONFORMANCE_TEST(dead_plane_detected_probed_and_readmitted, "5.9", "5.8", "3.10")
{
    need_planes(x);
    x.need_virtual_time();
    tconn& c = two_planes(x, true);
    c.auto_control = false;
    const region src = src_region(x, 256 * 1024, 62);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 256 * 1024, 620));
    receiver rcv;
    bool moved = false, probed = false, back = false, reposted = false;
    const uint64_t deadline = x.t.now_ns() + 200'000'000;
    while (x.t.now_ns() < deadline && !(back && x.completed(621))) {
        if (probed && !reposted && x.completed(620)) {
            // More data once the plane answered: its paths should be home again.
            x.post_send(c, req(wr_opcode::write, 2, src, 0, 64 * 1024, 621));
            reposted = true;
        }
        const auto k = x.p.expect([&](const rx_pkt& d) { return d.ok() && d.v().dst_conn == c.id; }, 1'000'000);
        if (!k) {
            continue;
        }
        const uint8_t plane = k->d->plane;
        if (k->is(wire::opcode::probe)) {
            // Plane 0 always answers. Plane 1 stays silent until a path has left it.
            probed = probed || (plane == 1 && moved);
            if (plane == 0 || moved) {
                x.p.send(x.p.probe_pkt(wire::opcode::probe_ack, c.iut_id, k->v().path, k->v().probe->token.host(),
                                       k->v().tx_ts),
                         {c.addr, plane, k->d->udp_sport, false});
            }
            continue;
        }
        if (!wire::info(k->op()).reliable) {
            continue;
        }
        if (plane == 1 && !probed) {
            continue; // the plane is dead: everything on it is lost
        }
        moved = moved || (plane == 0 && k->v().path % 2 == 1);
        back = back || (reposted && plane == 1 && k->v().path % 2 == 1);
        rcv.ack(x, c, *k, plane);
    }
    x.check(moved, "the paths of a silent plane never moved to the live one");
    x.check(probed, "the dead plane was never probed");
    x.check(back, "the paths did not return to their home plane after it answered a probe");
    for (uint64_t id : {620, 621}) {
        x.check(x.completed(id) && x.find_wc(id)->status == wc_status::success,
                "a WRITE did not complete: plane failure must not be visible to the application");
    }
}

} // namespace metaroce::conformance
