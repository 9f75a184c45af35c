// Fixed-capacity FIFO sized once on the control path; push/pop never allocate.
#pragma once

#include <cstddef>
#include <vector>

namespace metaroce::detail {

template <typename T>
class fixed_ring {
public:
    fixed_ring() = default;
    explicit fixed_ring(size_t capacity) : items_(capacity) {}

    bool push(const T& v) noexcept
    {
        if (count_ == items_.size()) {
            return false;
        }
        items_[(head_ + count_) % items_.size()] = v;
        ++count_;
        return true;
    }
    T& front() noexcept { return items_[head_]; }
    void pop() noexcept
    {
        head_ = (head_ + 1) % items_.size();
        --count_;
    }
    void clear() noexcept { head_ = count_ = 0; }
    bool empty() const noexcept { return count_ == 0; }
    bool full() const noexcept { return count_ == items_.size(); }
    size_t size() const noexcept { return count_; }
    size_t capacity() const noexcept { return items_.size(); }

private:
    std::vector<T> items_;
    size_t head_ = 0;
    size_t count_ = 0;
};

} // namespace metaroce::detail
