// The prompt's commands, declared in one table of words -> handler, with the synopsis
// and help: dispatch, "help", the usage of a verb and the cmdline tokens (prompt.cpp)
// all read the table.
#include <cstdio>
#include <algorithm>
#include <iterator>
#include <sstream>

#include "app.hpp"
#include "commands.hpp"

namespace metaroce::app {

namespace {

struct command {
    const char* words; // the fixed words that select it: "show port stats"
    const char* synopsis;
    const char* help;
    void (application::*run)(const application::args&);
};

const command k_commands[] = {
    {"help", "help [<verb>]", "list the commands (of one verb)", &application::cmd_help},
    {"show config", "show config", "the configuration this node runs with", &application::show_config},
    {"show port info", "show port info all|<port>", "driver, MAC, link and queues of one or all ports",
     &application::show_port_info},
    {"show port stats", "show port stats all|<port>", "NIC statistics and Rx/Tx pps and bps since the last show",
     &application::show_port_stats},
    {"show fwd stats", "show fwd stats", "forward statistics so far, without stopping (per worker when several)", &application::show_fwd_stats},
    {"show conn", "show conn [<id>] [json]", "connections (one in detail with its id)", &application::show_conn},
    {"show path", "show path <conn>", "the paths of a connection: plane, UDP port, window, RTT",
     &application::show_path},
    {"show planes", "show planes", "planes (ports), link and admin state", &application::show_planes},
    {"show cq", "show cq", "completions of the requests posted with 'post' (taken)", &application::show_cq},
    {"show stats", "show stats", "datapath and transport counters as JSON", &application::show_stats},
    {"show xstats", "show xstats", "every datapath and transport counter, one per line", &application::show_xstats},
    {"set plane", "set plane <n> down|up", "take a plane out of service or back", &application::set_plane},
    {"set fwd", "set fwd write_bw|send_bw|read_bw|write_lat|send_lat", "the forwarding engine",
     &application::set_fwd},
    {"connect", "connect <addr> [nowait]",
     "open a connection to a peer node (a worker's address), on the local worker with the fewest "
     "connections (nowait: do not wait for it)",
     &application::cmd_connect},
    {"close", "close <conn>", "close a connection (its requests flush)", &application::cmd_close},
    {"mr reg", "mr reg <len> none|<access>[,<access>...]",
     "register a region (local_write, remote_write, remote_read); prints its keys", &application::mr_reg},
    {"mr dereg", "mr dereg <lkey>", "deregister a region (its memory stays readable)", &application::mr_dereg},
    {"mr load", "mr load <lkey> <offset> <file>", "copy a file's bytes into a region", &application::mr_load},
    {"mr read", "mr read <lkey> <offset> <len>", "print bytes of a region in hex", &application::mr_read},
    {"post recv", "post recv <conn> <stream> <lkey> <offset> <len> <wr_id>", "post a receive",
     &application::post_recv},
    {"post send",
     "post send <conn> write|write_imm|send|send_imm|read <stream> <lkey> <offset> <len> <remote_va> "
     "<rkey> <imm> <wr_id> [unsignaled]",
     "post a send work request", &application::post_send},
    {"start", "start", "run the engine on every connection", &application::cmd_start},
    {"stop", "stop", "stop it, check the data and print the accumulated statistics", &application::cmd_stop},
    {"clear port stats", "clear port stats all|<port>", "zero the NIC statistics of one or all ports",
     &application::clear_port_stats},
    {"clear stats", "clear stats", "zero the port, datapath and transport counters", &application::clear_stats},
    {"quit", "quit", "stop and exit", &application::cmd_quit},
};

std::string line_of(const std::vector<std::string>& w)
{
    std::string out;
    for (const auto& x : w) {
        if (!out.empty()) {
            out += ' ';
        }
        out += x;
    }
    return out;
}

std::vector<std::string> split(const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) {
        out.push_back(w);
    }
    return out;
}

// The command whose words start the line, the longest when several do.
const command* resolve(const std::vector<std::string>& a)
{
    const command* best = nullptr;
    size_t best_n = 0;
    for (const command& c : k_commands) {
        const auto w = split(c.words);
        if (w.size() > best_n && w.size() <= a.size() && std::equal(w.begin(), w.end(), a.begin())) {
            best = &c;
            best_n = w.size();
        }
    }
    return best;
}

// "show port|conn|... ...": the words that may follow `head`, for a usage line.
std::string objects_of(const std::vector<std::string>& head)
{
    std::vector<std::string> next;
    for (const command& c : k_commands) {
        const auto w = split(c.words);
        if (w.size() > head.size() && std::equal(head.begin(), head.end(), w.begin()) &&
            std::find(next.begin(), next.end(), w[head.size()]) == next.end()) {
            next.push_back(w[head.size()]);
        }
    }
    std::string out = line_of(head) + " ";
    for (size_t i = 0; i < next.size(); ++i) {
        if (i != 0) {
            out += '|';
        }
        out += next[i];
    }
    return out + " ...";
}

} // namespace

uint64_t parse_number(const std::string& s, const char* what)
{
    size_t used = 0;
    uint64_t v = 0;
    try {
        if (!s.empty() && s[0] != '-') {
            v = std::stoull(s, &used, 0);
        }
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != s.size()) {
        throw std::invalid_argument(std::string("bad ") + what + " '" + s + "': not a number");
    }
    return v;
}

std::vector<command_info> command_table()
{
    std::vector<command_info> out;
    for (const command& c : k_commands) {
        out.push_back({c.words, c.synopsis, c.help});
    }
    return out;
}

bool application::execute(const std::string& line)
{
    const args a = split(line);
    if (a.empty() || a[0][0] == '#') {
        return true;
    }
    clear_interrupt();
    const command* hit = resolve(a);
    bool known = false;
    for (const command& c : k_commands) {
        known |= split(c.words)[0] == a[0];
    }
    if (!known) {
        std::printf("Unknown command '%s'; type 'help' for the list\n", a[0].c_str());
    } else {
        try {
            if (hit == nullptr) {
                // The deepest word that selects nothing is the one to name.
                size_t n = 1;
                for (bool more = true; more && n < a.size(); ) {
                    more = false;
                    for (const command& c : k_commands) {
                        const auto w = split(c.words);
                        more |= w.size() > n && std::equal(a.begin(), a.begin() + long(n) + 1, w.begin());
                    }
                    n += more ? 1 : 0;
                }
                const args head(a.begin(), a.begin() + long(n));
                usage_error(objects_of(head), a.size() <= n ? line_of(head) + " what?" : "unknown object '" + a[n] + "'");
            }
            (this->*hit->run)(a);
        } catch (const std::invalid_argument& e) {
            std::printf("Bad arguments: %s\n", e.what());
        }
    }
    std::fflush(stdout);
    return !quit_;
}

void application::cmd_help(const args& a)
{
    if (a.size() > 2) {
        usage_error("help [<verb>]", "one verb at most");
    }
    const std::string verb = a.size() == 2 ? a[1] : "";
    bool any = false;
    for (const command& c : k_commands) {
        any |= verb.empty() || split(c.words)[0] == verb;
    }
    if (!any) {
        throw std::invalid_argument("no command '" + verb + "' (type 'help' for the list)");
    }
    std::printf("Commands%s:\n", verb.empty() ? "" : (" of '" + verb + "'").c_str());
    for (const command& c : k_commands) {
        if (verb.empty() || split(c.words)[0] == verb) {
            std::printf("  %-52s %s\n", c.synopsis, c.help);
        }
    }
}

} // namespace metaroce::app
