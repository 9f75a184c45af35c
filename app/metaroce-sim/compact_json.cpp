#include "compact_json.hpp"

#include <algorithm>
#include <vector>

namespace metaroce::sim_cli {

namespace {

using json = nlohmann::ordered_json;

bool is_flat(const json& j)
{
    return std::none_of(j.begin(), j.end(), [](const json& v) { return v.is_structured(); });
}

// "key": value (objects) or value (arrays), each already on one line.
std::vector<std::string> flat_items(const json& j)
{
    std::vector<std::string> items;
    for (auto it = j.begin(); it != j.end(); ++it) {
        std::string s = j.is_object() ? json(it.key()).dump() + ": " : std::string();
        s += it->dump();
        items.push_back(std::move(s));
    }
    return items;
}

class writer {
public:
    explicit writer(size_t width) : width_(width) {}

    // Writes j starting at column col; indent is the current nesting's indent.
    void value(const json& j, size_t indent, size_t col)
    {
        if (!j.is_structured() || j.empty()) {
            out_ += j.dump();
            return;
        }
        const char open = j.is_object() ? '{' : '[';
        const char close = j.is_object() ? '}' : ']';
        if (is_flat(j)) {
            fill(flat_items(j), open, close, col);
            return;
        }
        out_ += open;
        out_ += '\n';
        size_t n = 0;
        for (auto it = j.begin(); it != j.end(); ++it) {
            const std::string pad(indent + 2, ' ');
            out_ += pad;
            size_t c = pad.size();
            if (j.is_object()) {
                const std::string key = json(it.key()).dump() + ": ";
                out_ += key;
                c += key.size();
            }
            value(*it, indent + 2, c);
            out_ += ++n < j.size() ? ",\n" : "\n";
        }
        out_ += std::string(indent, ' ');
        out_ += close;
    }

    std::string take() { return std::move(out_); }

private:
    // Items separated by ", ", wrapped at the width; continuation lines sit one
    // column right of the opening bracket so the block reads as one value.
    void fill(const std::vector<std::string>& items, char open, char close, size_t col)
    {
        out_ += open;
        const size_t cont = col + 1;
        size_t c = cont;
        for (size_t i = 0; i < items.size(); ++i) {
            const bool last = i + 1 == items.size();
            const size_t need = items[i].size() + 1; // ',' or the closing bracket
            if (i > 0) {
                if (c + 1 + need > width_) {
                    out_ += '\n';
                    out_ += std::string(cont, ' ');
                    c = cont;
                } else {
                    out_ += ' ';
                    ++c;
                }
            }
            out_ += items[i];
            out_ += last ? close : ',';
            c += need;
        }
    }

    size_t width_;
    std::string out_;
};

} // namespace

std::string compact_dump(const json& j, size_t width)
{
    writer w(width);
    w.value(j, 0, 0);
    return w.take();
}

} // namespace metaroce::sim_cli
