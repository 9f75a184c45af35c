#include "sim/event_queue.hpp"

#include <algorithm>

namespace metaroce::sim {

namespace {
// std heaps are max-heaps: "a after b" puts the earliest event on top. A functor,
// not a function pointer, so the heap operations inline the comparison.
struct later {
    bool operator()(const event& a, const event& b) const noexcept
    {
        if (a.time != b.time) {
            return a.time > b.time;
        }
        return a.seq > b.seq;
    }
};
} // namespace

void event_queue::push(sim_time time, event_kind kind, uint32_t a, uint32_t b)
{
    heap_.push_back(event{time, seq_++, a, b, kind});
    std::push_heap(heap_.begin(), heap_.end(), later{});
}

event event_queue::pop()
{
    std::pop_heap(heap_.begin(), heap_.end(), later{});
    const event e = heap_.back();
    heap_.pop_back();
    return e;
}

} // namespace metaroce::sim
