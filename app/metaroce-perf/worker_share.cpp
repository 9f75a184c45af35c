#include "worker_share.hpp"

#include <algorithm>

namespace metaroce::perf {

std::vector<bw_result> sum_bw_rows(const options& o, const std::vector<session_result>& parts)
{
    std::vector<bw_result> out;
    for (const session_result& p : parts) {
        for (size_t i = 0; i < p.bw.size(); ++i) {
            if (out.size() <= i) {
                out.push_back(bw_result{p.bw[i].bytes, 0, 0, 0, 0, 0});
            }
            out[i].iters += p.bw[i].iters;
            out[i].seconds = std::max(out[i].seconds, p.bw[i].seconds);
            out[i].peak += p.bw[i].peak;
        }
    }
    for (bw_result& r : out) {
        r = bw_row(o, r.bytes, r.iters, uint64_t(r.seconds * 1e9), r.peak);
        r.peak = o.no_peak ? 0 : std::max(r.peak, r.avg);
    }
    return out;
}

} // namespace metaroce::perf
