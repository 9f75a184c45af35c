// The prompt's commands, declared in one table of (verb, object) -> handler, with the
// synopsis and help: dispatch, "help" and the usage of a verb all read the table.
#include <cstdio>
#include <iterator>
#include <sstream>

#include "app.hpp"
#include "commands.hpp"

namespace metaroce::app {

namespace {

struct command {
    const char* verb;
    const char* object; // "": the verb takes no object
    const char* synopsis;
    const char* help;
    void (application::*run)(const application::args&);
};

const command k_commands[] = {
    {"help", "", "help", "list the commands", &application::cmd_help},
    {"show", "port", "show port stats all|<port>", "ethdev and datapath counters of one or all ports",
     &application::show_port},
    {"show", "conn", "show conn [<id>] [json]", "connections (one in detail with its id)", &application::show_conn},
    {"show", "path", "show path <conn>", "the paths of a connection: plane, UDP port, window, RTT",
     &application::show_path},
    {"show", "planes", "show planes", "planes (ports), link and admin state", &application::show_planes},
    {"show", "cq", "show cq", "completions of the requests posted with 'post' (taken)", &application::show_cq},
    {"show", "stats", "show stats", "datapath and transport counters as JSON", &application::show_stats},
    {"show", "xstats", "show xstats", "every datapath and transport counter, one per line", &application::show_xstats},
    {"set", "plane", "set plane <n> down|up", "take a plane out of service or back", &application::set_plane},
    {"set", "fwd", "set fwd write_bw|send_bw|read_bw|write_lat|send_lat", "the forwarding engine",
     &application::set_fwd},
    {"connect", "", "connect <addr> [nowait]", "open a connection to a peer node (nowait: do not wait for it)",
     &application::cmd_connect},
    {"close", "", "close <conn>", "close a connection (its requests flush)", &application::cmd_close},
    {"mr", "reg", "mr reg <len> none|<access>[,<access>...]",
     "register a region (local_write, remote_write, remote_read); prints its keys", &application::mr_reg},
    {"mr", "dereg", "mr dereg <lkey>", "deregister a region (its memory stays readable)", &application::mr_dereg},
    {"mr", "load", "mr load <lkey> <offset> <file>", "copy a file's bytes into a region", &application::mr_load},
    {"mr", "read", "mr read <lkey> <offset> <len>", "print bytes of a region in hex", &application::mr_read},
    {"post", "recv", "post recv <conn> <stream> <lkey> <offset> <len> <wr_id>", "post a receive",
     &application::post_recv},
    {"post", "send",
     "post send <conn> write|write_imm|send|send_imm|read <stream> <lkey> <offset> <len> <remote_va> "
     "<rkey> <imm> <wr_id> [unsignaled]",
     "post a send work request", &application::post_send},
    {"start", "", "start", "run the engine on every connection", &application::cmd_start},
    {"stop", "", "stop", "stop it, check the data and print the accumulated statistics", &application::cmd_stop},
    {"clear", "stats", "clear stats", "zero the port, datapath and transport counters", &application::clear_stats},
    {"quit", "", "quit", "stop and exit", &application::cmd_quit},
};

std::vector<std::string> split(const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) {
        out.push_back(w);
    }
    return out;
}

// "show port|conn|... ...": the objects a verb takes, for its usage line.
std::string objects_of(const std::string& verb)
{
    std::string out;
    for (const command& c : k_commands) {
        if (verb == c.verb) {
            out += (out.empty() ? verb + " " : "|") + c.object;
        }
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

bool application::execute(const std::string& line)
{
    const args a = split(line);
    if (a.empty() || a[0][0] == '#') {
        return true;
    }
    bool known = false;
    const command* hit = nullptr;
    for (const command& c : k_commands) {
        if (a[0] == c.verb) {
            known = true;
            if (*c.object == '\0' || (a.size() > 1 && a[1] == c.object)) {
                hit = &c;
                break;
            }
        }
    }
    if (!known) {
        std::printf("Unknown command '%s'; type 'help' for the list\n", a[0].c_str());
    } else {
        try {
            if (hit == nullptr) {
                usage_error(objects_of(a[0]), a.size() < 2 ? a[0] + " what?" : "unknown object '" + a[1] + "'");
            }
            (this->*hit->run)(a);
        } catch (const std::invalid_argument& e) {
            std::printf("Bad arguments: %s\n", e.what());
        }
    }
    std::fflush(stdout);
    return !quit_;
}

void application::cmd_help(const args&)
{
    std::printf("Commands:\n");
    for (const command& c : k_commands) {
        std::printf("  %-52s %s\n", c.synopsis, c.help);
    }
}

} // namespace metaroce::app
