#include <wslay/wslay.h>
