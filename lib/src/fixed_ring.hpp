// Fixed-capacity FIFO sized once on the control path; push/pop never allocate.
#pragma once

#include <cstddef>
#include <vector>

namespace metaroce::detail {

template <typename T>
class fixed_ring {
public:
    fixed_ring() = default;
    explicit fixed_ring(size_t capacity) : items_(capacity), cap_(capacity) {}

    // Several of these run for every packet: the capacity is kept, not derived from the
    // vector, and indexes wrap by one compare (they never exceed twice the capacity).
    bool push(const T& v) noexcept
    {
        if (count_ == cap_) {
            return false;
        }
        size_t i = head_ + count_;
        items_[i >= cap_ ? i - cap_ : i] = v;
        ++count_;
        return true;
    }
    T& front() noexcept { return items_[head_]; }
    void pop() noexcept
    {
        head_ = head_ + 1 == cap_ ? 0 : head_ + 1;
        --count_;
    }
    void clear() noexcept { head_ = count_ = 0; }
    bool empty() const noexcept { return count_ == 0; }
    bool full() const noexcept { return count_ == cap_; }
    size_t size() const noexcept { return count_; }
    size_t capacity() const noexcept { return cap_; }

private:
    std::vector<T> items_;
    size_t cap_ = 0;
    size_t head_ = 0;
    size_t count_ = 0;
};

} // namespace metaroce::detail
