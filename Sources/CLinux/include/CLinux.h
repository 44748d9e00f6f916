// Linux system calls and constants that Swift's Glibc module does not export.
#ifndef AASA_CLINUX_H
#define AASA_CLINUX_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/vfs.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <pthread.h>
#include <malloc.h>

// accept4(2) is declared only under _GNU_SOURCE.
int aasa_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);

// getdents64(2) is declared only under _GNU_SOURCE: a directory's entries, straight into a buffer.
ssize_t aasa_getdents64(int fd, void *buffer, size_t length);

// statfs(2)'s filesystem type, for --watch auto (network filesystems are polled).
static inline long aasa_statfs_type(const char *path) { struct statfs st; return statfs(path, &st) == 0 ? (long)st.f_type : -1; }

static inline int aasa_sigaddset(sigset_t *set, int signo) { return sigaddset(set, signo); }

#endif
