// Sanitizer defaults built into every fuzz target, so an input run by hand behaves as
// under scripts/fuzz.sh. The environment (ASAN_OPTIONS, UBSAN_OPTIONS) still overrides.

// fuzz_endpoint builds two endpoints per execution; a smaller quarantine lets ASan reuse
// their memory instead of faulting in fresh pages each time (about 3x faster). A
// use-after-free within one execution is still caught: an execution frees far less.
extern "C" const char* __asan_default_options() { return "quarantine_size_mb=16"; }

// Where undefined behaviour happened, not just that it did.
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1"; }
