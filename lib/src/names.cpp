// Printable names of the public enums.
#include "metaroce/inspect.hpp"
#include "metaroce/verbs_types.hpp"

namespace metaroce {

std::string_view to_string(wc_status s) noexcept
{
    switch (s) {
    case wc_status::success: return "success";
    case wc_status::loc_len_err: return "local length error";
    case wc_status::loc_prot_err: return "local protection error";
    case wc_status::wr_flush_err: return "work request flushed";
    case wc_status::rem_access_err: return "remote access error";
    case wc_status::rem_inv_req_err: return "remote invalid request";
    case wc_status::rnr_retry_exc_err: return "receiver not ready, retries exceeded";
    case wc_status::retry_exc_err: return "transport retries exceeded";
    case wc_status::rem_op_err: return "remote operation error";
    }
    return "?";
}

std::string_view to_string(post_result r) noexcept
{
    switch (r) {
    case post_result::ok: return "ok";
    case post_result::no_such_conn: return "no such connection";
    case post_result::conn_not_usable: return "connection is not usable (closing, closed or in error)";
    case post_result::queue_full: return "queue full";
    case post_result::bad_stream: return "stream out of range";
    case post_result::bad_lkey: return "invalid lkey";
    case post_result::bad_access: return "region lacks the needed access right";
    case post_result::out_of_bounds: return "buffer outside its region";
    case post_result::too_long: return "message too long";
    case post_result::too_many_sge: return "too many scatter/gather entries";
    }
    return "?";
}

std::string_view to_string(path_state s) noexcept
{
    switch (s) {
    case path_state::good: return "good";
    case path_state::congested: return "congested";
    case path_state::suspect: return "suspect";
    case path_state::failed: return "failed";
    }
    return "?";
}

std::string_view to_string(conn_state s) noexcept
{
    switch (s) {
    case conn_state::connecting: return "connecting";
    case conn_state::established: return "established";
    case conn_state::closing: return "closing";
    case conn_state::closed: return "closed";
    case conn_state::error: return "error";
    }
    return "?";
}

} // namespace metaroce
