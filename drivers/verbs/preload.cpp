// The LD_PRELOAD build: the same implementation as libibverbs.so.1, with the
// program's own libibverbs underneath for everything else (metaroce-run --preload).
// Nothing to add: this file only gives the shared library a source of its own.
namespace metaroce::verbs {
[[maybe_unused]] static const char k_build[] = "metaroce verbs preload";
} // namespace metaroce::verbs
