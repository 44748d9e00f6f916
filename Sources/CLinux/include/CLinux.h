// Linux system calls and constants that Swift's Glibc module does not export.
#ifndef AASA_CLINUX_H
#define AASA_CLINUX_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <pthread.h>

// accept4(2) is declared only under _GNU_SOURCE.
int aasa_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);

static inline int aasa_sigaddset(sigset_t *set, int signo) { return sigaddset(set, signo); }

#endif
