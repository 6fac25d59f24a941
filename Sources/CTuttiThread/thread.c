#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include "tutti_thread.h"

void tutti_set_thread_name(const char *name) {
    char shortName[16];
    strncpy(shortName, name, 15);
    shortName[15] = 0;
    pthread_setname_np(pthread_self(), shortName);
}
