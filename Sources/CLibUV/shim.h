#include <uv.h>
#include <sys/epoll.h>
