// The prompt's cmdline context, built at start-up from command_table(): per command,
// one instance of string tokens (its fixed words, then word choices such as
// "write_bw#send_bw#...") and, when it takes arguments, a multi-word token for them.
// A last instance takes any line no other one matches, so execute() prints its precise
// "Unknown command" / "Bad arguments" message instead of cmdline's terse one.
#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_string.h>
#include <cmdline_socket.h>

#include <termios.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "commands.hpp"
#include "prompt.hpp"

namespace metaroce::app {

namespace {

// What an instance's callback needs to rebuild the line from the parse result: the
// string token i is at offset i * STR_TOKEN_SIZE, the arguments (if any) after them.
struct inst_data {
    application* app;
    size_t tokens;
    bool args;
};

std::vector<std::string> split(const std::string& s)
{
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;) {
        out.push_back(w);
    }
    return out;
}

// "down|up" -> "down#up" (cmdline's choice list); "" when the word is not a list of words.
std::string choices(const std::string& w)
{
    if (w.find('|') == std::string::npos) {
        return "";
    }
    for (char c : w) {
        if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
              c == '_' || c == '|')) {
            return "";
        }
    }
    std::string out = w;
    for (char& c : out) {
        c = c == '|' ? '#' : c;
    }
    return out;
}

// cmdline clears ISIG, reading Ctrl-C as a character; but it reads nothing while a
// command runs. Let the terminal turn Ctrl-C into SIGINT meanwhile, so a command that
// waits (connect, stop) sees application::interrupted().
class ctrl_c_signals {
public:
    ctrl_c_signals() : on_(tcgetattr(STDIN_FILENO, &saved_) == 0)
    {
        if (on_) {
            termios t = saved_;
            t.c_lflag |= ISIG;
            tcsetattr(STDIN_FILENO, TCSANOW, &t);
        }
    }
    ~ctrl_c_signals()
    {
        if (on_) {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
        }
    }
    ctrl_c_signals(const ctrl_c_signals&) = delete;
    ctrl_c_signals& operator=(const ctrl_c_signals&) = delete;

private:
    termios saved_{};
    bool on_;
};

void on_line(void* parsed, cmdline* cl, void* data)
{
    const ctrl_c_signals sig;
    const auto* d = static_cast<const inst_data*>(data);
    const char* res = static_cast<const char*>(parsed);
    std::string line;
    for (size_t i = 0; i < d->tokens + (d->args ? 1 : 0); ++i) {
        if (!line.empty()) {
            line += ' ';
        }
        line += res + i * STR_TOKEN_SIZE;
    }
    if (!d->app->execute(line)) {
        cmdline_quit(cl);
    }
}

bool blank(char c) { return c == ' ' || c == '\t'; }

// As cmdline's own (not exported by librte_cmdline): a line ends at a newline or a comment.
bool end_of_command(char c) { return c == '\0' || c == '#' || c == '\n' || c == '\r'; }

// Whether `inst` takes the whole of `buf`, as cmdline_parse would.
bool takes(const cmdline_parse_inst_t* inst, const char* buf)
{
    for (size_t i = 0; inst->tokens[i] != nullptr; ++i) {
        while (blank(*buf)) {
            ++buf;
        }
        if (end_of_command(*buf)) {
            return false;
        }
        // A result buffer as cmdline gives (the multi-word token refuses to parse without one).
        static char scratch[CMDLINE_PARSE_RESULT_BUFSIZE];
        const unsigned off = inst->tokens[i]->offset;
        const int n = inst->tokens[i]->ops->parse(inst->tokens[i], buf, scratch + off, sizeof(scratch) - off);
        if (n < 0) {
            return false;
        }
        buf += n;
    }
    while (blank(*buf)) {
        ++buf;
    }
    return end_of_command(*buf);
}

struct prompt_ctx;
prompt_ctx* g_ctx = nullptr; // the fallback token's parse needs the other instances

struct prompt_ctx {
    std::deque<std::string> strings;
    std::deque<inst_data> data;
    std::vector<std::unique_ptr<cmdline_parse_token_string_t>> tokens;
    std::vector<std::unique_ptr<void, decltype(&std::free)>> insts;
    std::vector<cmdline_parse_inst_t*> ctx; // the fallback, then nullptr, last
    const cmdline_parse_inst_t* fallback = nullptr;

    cmdline_parse_inst_t* add(const std::vector<cmdline_parse_token_hdr_t*>& toks, const inst_data& d,
                              const std::string& help)
    {
        void* mem = std::calloc(1, sizeof(cmdline_parse_inst_t) + (toks.size() + 1) * sizeof(void*));
        if (mem == nullptr) {
            throw std::bad_alloc();
        }
        insts.emplace_back(mem, &std::free);
        auto* inst = static_cast<cmdline_parse_inst_t*>(mem);
        inst->f = on_line;
        data.push_back(d);
        inst->data = &data.back();
        strings.push_back(help);
        inst->help_str = strings.back().c_str();
        for (size_t i = 0; i < toks.size(); ++i) {
            inst->tokens[i] = toks[i];
        }
        ctx.push_back(inst);
        return inst;
    }

    cmdline_parse_token_hdr_t* string_token(const std::string& s, size_t index)
    {
        strings.push_back(s);
        auto t = std::make_unique<cmdline_parse_token_string_t>();
        t->hdr.ops = &cmdline_token_string_ops;
        t->hdr.offset = unsigned(index * STR_TOKEN_SIZE);
        t->string_data.str = strings.back().c_str();
        tokens.push_back(std::move(t));
        return &tokens.back()->hdr;
    }
};

// The fallback token: any line that no command instance takes, whole.
int any_parse(cmdline_parse_token_hdr_t*, const char* buf, void* res, unsigned size)
{
    size_t len = 0;
    while (buf != nullptr && !end_of_command(buf[len])) {
        ++len;
    }
    // Only a whole line (completion passes the unfinished one, without its newline).
    if (len == 0 || std::strchr(buf, '\n') == nullptr) {
        return -1;
    }
    for (const cmdline_parse_inst_t* inst : g_ctx->ctx) {
        if (inst != nullptr && inst != g_ctx->fallback && takes(inst, buf)) {
            return -1;
        }
    }
    if (res != nullptr && size > 0) {
        std::snprintf(static_cast<char*>(res), size, "%.*s", int(len), buf);
    }
    return int(len);
}

int any_help(cmdline_parse_token_hdr_t*, char* dst, unsigned size)
{
    std::snprintf(dst, size, "anything else");
    return 0;
}

cmdline_token_ops g_any_ops = {any_parse, nullptr, nullptr, any_help};
cmdline_parse_token_hdr_t g_any_token = {&g_any_ops, 0};

void build(prompt_ctx& p, application& a)
{
    for (const command_info& c : command_table()) {
        const auto words = split(c.words);
        const auto syn = split(c.synopsis);
        std::vector<cmdline_parse_token_hdr_t*> toks;
        for (const auto& w : words) {
            toks.push_back(p.string_token(w, toks.size()));
        }
        size_t i = words.size();
        for (; i < syn.size() && !choices(syn[i]).empty(); ++i) {
            toks.push_back(p.string_token(choices(syn[i]), toks.size()));
        }
        bool required = false;
        for (size_t j = i; j < syn.size(); ++j) {
            required |= syn[j][0] != '[';
        }
        const std::string help = c.synopsis + ": " + c.help;
        if (!required) {
            p.add(toks, {&a, toks.size(), false}, help);
        }
        if (i < syn.size()) {
            if ((toks.size() + 1) * STR_TOKEN_SIZE + STR_MULTI_TOKEN_SIZE > CMDLINE_PARSE_RESULT_BUFSIZE) {
                throw std::logic_error("prompt: too many words in '" + c.synopsis + "'");
            }
            toks.push_back(p.string_token(TOKEN_STRING_MULTI, toks.size()));
            p.add(toks, {&a, toks.size() - 1, true}, help);
        }
    }
    p.fallback = p.add({&g_any_token}, {&a, 0, true}, "type 'help' for the commands");
    p.ctx.push_back(nullptr);
}

} // namespace

void run_prompt(application& a)
{
    prompt_ctx p;
    build(p, a);
    g_ctx = &p;
    cmdline* cl = cmdline_stdin_new(p.ctx.data(), "metaroce> ");
    if (cl == nullptr) {
        g_ctx = nullptr;
        throw std::runtime_error("cannot open the prompt");
    }
    cmdline_interact(cl);
    cmdline_stdin_exit(cl);
    g_ctx = nullptr;
}

} // namespace metaroce::app
