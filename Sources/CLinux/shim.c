#define _GNU_SOURCE
#include <sys/socket.h>
#include <dirent.h>
#include "CLinux.h"

int aasa_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) { return accept4(fd, addr, len, flags); }

ssize_t aasa_getdents64(int fd, void *buffer, size_t length) { return getdents64(fd, buffer, length); }
