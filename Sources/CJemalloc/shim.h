#include <dlfcn.h>
#include <stddef.h>
#include <jemalloc/jemalloc.h>

/* 1 when the process's `malloc` (what the dynamic linker bound, for every
   library) is jemalloc's, 0 when it is another's, -1 when it cannot tell. */
static inline int rewind_jemalloc_serves_malloc(void) {
    void *jemalloc = dlopen("libjemalloc.so.2", RTLD_LAZY | RTLD_NOLOAD);
    if (jemalloc == NULL) return -1;
    void *its = dlsym(jemalloc, "malloc");
    void *bound = dlsym(NULL, "malloc"); /* NULL: RTLD_DEFAULT, the global scope */
    dlclose(jemalloc);
    if (its == NULL || bound == NULL) return -1;
    return its == bound;
}
