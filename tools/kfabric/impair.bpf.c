// SPDX-License-Identifier: GPL-2.0
// Fabric impairments for the kernel test fabric (scripts/kfabric.sh): a tc
// direct-action program on the egress of the middle links. It touches IPv4/UDP
// frames only and, each independently, with a probability in parts per million:
//   LOSS_PPM     drops the frame (iid loss)
//   CE_PPM       marks an ECN-capable (ECT) frame Congestion Experienced
//   DUP_PPM      sends a second copy right behind it
//   REORDER_PPM  holds it back and lets the next frame of its flow (same link, same
//                CPU) pass first; a held frame with no successor within HOLD_NS is lost
// The script compiles one object per setting (-DLOSS_PPM=...): no map tooling is
// needed to configure it, and a program that is not loaded costs nothing.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef LOSS_PPM
#define LOSS_PPM 0
#endif
#ifndef CE_PPM
#define CE_PPM 0
#endif
#ifndef DUP_PPM
#define DUP_PPM 0
#endif
#ifndef REORDER_PPM
#define REORDER_PPM 0
#endif
#ifndef HOLD_NS
#define HOLD_NS 5000000ULL
#endif

// A copy this program made (duplicate or released frame): sent on untouched.
#define OUR_COPY 0x6b666162u

// Largest frame a reorder slot holds (a power of two); bigger frames are never held.
#define SLOT_BYTES 8192

struct slot {
    __u64 t_ns; // when it was held, 0: empty
    __u32 len;
    __u32 ifindex;
    __u8 bytes[SLOT_BYTES];
};

// One held frame per CPU and slot; a slot is picked by link and flow hash, so the
// frame that releases a held one is most likely the next of the same UDP flow.
#define SLOTS 64
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, SLOTS);
    __type(key, __u32);
    __type(value, struct slot);
} held SEC(".maps");

static __always_inline int chance(__u32 ppm)
{
    return ppm != 0 && bpf_get_prandom_u32() % 1000000u < ppm;
}

// Sets the ECN field to CE and patches the header checksum for the changed word.
static __always_inline void mark_ce(struct __sk_buff* skb, __u8 ver_ihl, __u8 tos)
{
    const __u8 ce = tos | 0x3;
    const __u16 old_word = bpf_htons(((__u16)ver_ihl << 8) | tos);
    const __u16 new_word = bpf_htons(((__u16)ver_ihl << 8) | ce);
    bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check), old_word,
                        new_word, 2);
    bpf_skb_store_bytes(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, tos), &ce, 1, 0);
}

// Holds this frame in the slot (it is then dropped); 0 when the slot was busy.
static __always_inline int hold(struct __sk_buff* skb, struct slot* s, __u64 now)
{
    const __u32 len = skb->len & (SLOT_BYTES - 1); // the mask bounds it for the verifier
    if (s->t_ns != 0 || len != skb->len || len < ETH_HLEN) {
        return 0;
    }
    if (bpf_skb_load_bytes(skb, 0, s->bytes, len) != 0) {
        return 0;
    }
    s->len = len;
    s->ifindex = skb->ifindex;
    s->t_ns = now;
    return 1;
}

// Sends this frame first (a marked clone), then turns the frame itself into the
// held one, which so leaves second.
static __always_inline void release(struct __sk_buff* skb, struct slot* s)
{
    const __u32 len = s->len & (SLOT_BYTES - 1);
    s->t_ns = 0;
    skb->mark = OUR_COPY;
    bpf_clone_redirect(skb, skb->ifindex, 0);
    skb->mark = 0;
    if (len < ETH_HLEN || bpf_skb_change_tail(skb, len, 0) != 0) {
        return;
    }
    bpf_skb_store_bytes(skb, 0, s->bytes, len, 0);
}

SEC("tc")
int impair(struct __sk_buff* skb)
{
    if (skb->mark == OUR_COPY) {
        skb->mark = 0;
        return TC_ACT_OK;
    }
    void* data = (void*)(long)skb->data;
    void* end = (void*)(long)skb->data_end;
    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP)) {
        return TC_ACT_OK;
    }
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > end || ip->protocol != IPPROTO_UDP) {
        return TC_ACT_OK;
    }
    const __u8 ver_ihl = *(__u8*)ip;
    const __u8 tos = ip->tos;

    if (chance(LOSS_PPM)) {
        return TC_ACT_SHOT;
    }
    if ((tos & 0x3) != 0 && (tos & 0x3) != 0x3 && chance(CE_PPM)) {
        mark_ce(skb, ver_ihl, tos);
    }
    if (chance(DUP_PPM)) {
        skb->mark = OUR_COPY;
        bpf_clone_redirect(skb, skb->ifindex, 0);
        skb->mark = 0;
    }
    const __u32 key = (skb->ifindex ^ bpf_get_hash_recalc(skb)) % SLOTS;
    struct slot* s = REORDER_PPM > 0 ? bpf_map_lookup_elem(&held, &key) : 0;
    if (s != 0) {
        const __u64 now = bpf_ktime_get_ns();
        if (s->t_ns != 0 && (s->ifindex != skb->ifindex || now - s->t_ns > HOLD_NS)) {
            s->t_ns = 0; // stale or another link's: that frame is lost
        }
        if (s->t_ns != 0) {
            release(skb, s);
        } else if (chance(REORDER_PPM) && hold(skb, s, now)) {
            return TC_ACT_SHOT;
        }
    }
    return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
