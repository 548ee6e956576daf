/* atm_socket_shim.c - LD_PRELOAD shim that lets unmodified linux-atm tools
 * (saaldump, atmdump, aread, awrite) run on a kernel without ATM sockets.
 *
 * socket(PF_ATMPVC|PF_ATMSVC, ...) returns a file descriptor backed by files:
 *   ATMSHIM_IN   file of framed PDUs read by the tool (be32 length + bytes);
 *                default /dev/null (EOF at once)
 *   ATMSHIM_OUT  file to which PDUs written by the tool are appended, framed
 *                the same way (optional)
 * setsockopt/getsockopt/bind/connect on such a descriptor succeed and do
 * nothing; ioctl(SIOCGSTAMP) returns the current time, ATM_GETLINKRATE
 * returns ATMSHIM_LINKRATE (default 353207 cells/s, OC-3), ATM_GETADDR
 * returns no addresses, any other ioctl succeeds doing nothing; read()
 * returns one whole PDU per call (like a SOCK_DGRAM ATM socket), 0 at EOF.
 * ATMSHIM_IN/ATMSHIM_OUT may be FIFOs: then the tool becomes a live peer
 * (e.g. atmsigd's SSCOP/Q.2931 on the signalling VC, see atmsigd_peer_demo.py).
 *
 * Added for the atmsigd interop tests (crates/natm-interop):
 *   ATMSHIM_LOCAL  40 hex digits: ATM_GETADDR returns this one local AESA
 *                  instead of none (atmsigd places no call without a local
 *                  address: "no local address", EADDRNOTAVAIL)
 *   getsockname    on an ATM descriptor returns the PVC address given to
 *                  bind(), with ATM_VCI_ANY replaced by the next VCI from
 *                  ATMSHIM_VCI (default 32) on; atmsigd -m network allocates
 *                  the VCI of every call this way (bind VCI_ANY, getsockname)
 *                  and exits if getsockname fails
 *
 * Build: gcc -shared -fPIC -O2 -o atm_socket_shim.so atm_socket_shim.c -ldl
 * Use:   ATMSHIM_IN=pdus.bin LD_PRELOAD=atm_socket_shim.so saaldump 0.5
 * Written for natm's interoperability tests; no linux-atm code inside.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <linux/atmdev.h>

#define PF_ATMPVC_ 8
#define PF_ATMSVC_ 20
#define MAXFD 1024

static unsigned char is_atm[MAXFD];
static int out_fd[MAXFD];
static struct sockaddr_atmpvc bound[MAXFD];
static int next_vci = -1;

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_socket)(int, int, int);
static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_close)(int);

static void init(void)
{
    if (real_read) return;
    real_read = dlsym(RTLD_NEXT, "read");
    real_write = dlsym(RTLD_NEXT, "write");
    real_socket = dlsym(RTLD_NEXT, "socket");
    real_ioctl = dlsym(RTLD_NEXT, "ioctl");
    real_close = dlsym(RTLD_NEXT, "close");
}

static int shim(int fd) { return fd >= 0 && fd < MAXFD && is_atm[fd]; }

int socket(int domain, int type, int protocol)
{
    init();
    if (domain != PF_ATMPVC_ && domain != PF_ATMSVC_)
        return real_socket(domain, type, protocol);
    const char *in = getenv("ATMSHIM_IN");
    const char *out = getenv("ATMSHIM_OUT");
    int fd = open(in && *in ? in : "/dev/null", O_RDONLY);
    if (fd < 0 || fd >= MAXFD) return -1;
    is_atm[fd] = 1;
    out_fd[fd] = out && *out ? open(out, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
    return fd;
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    static int (*real)(int, int, int, const void *, socklen_t);
    if (shim(fd)) return 0;
    if (!real) real = dlsym(RTLD_NEXT, "setsockopt");
    return real(fd, level, name, val, len);
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    static int (*real)(int, int, int, void *, socklen_t *);
    if (shim(fd)) return 0;
    if (!real) real = dlsym(RTLD_NEXT, "getsockopt");
    return real(fd, level, name, val, len);
}

int bind(int fd, const struct sockaddr *a, socklen_t l)
{
    static int (*real)(int, const struct sockaddr *, socklen_t);
    if (shim(fd)) {
        memset(&bound[fd], 0, sizeof(bound[fd]));
        if (a && l >= sizeof(struct sockaddr_atmpvc) && a->sa_family == PF_ATMPVC_) {
            memcpy(&bound[fd], a, sizeof(bound[fd]));
            if (bound[fd].sap_addr.vci == ATM_VCI_ANY) {
                if (next_vci < 0) {
                    const char *e = getenv("ATMSHIM_VCI");
                    next_vci = e && *e ? atoi(e) : 32;
                }
                bound[fd].sap_addr.vci = next_vci++;
            }
        }
        return 0;
    }
    if (!real) real = dlsym(RTLD_NEXT, "bind");
    return real(fd, a, l);
}

int getsockname(int fd, struct sockaddr *a, socklen_t *l)
{
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (shim(fd)) {
        size_t n = *l < sizeof(bound[fd]) ? *l : sizeof(bound[fd]);
        memcpy(a, &bound[fd], n);
        *l = sizeof(bound[fd]);
        return 0;
    }
    if (!real) real = dlsym(RTLD_NEXT, "getsockname");
    return real(fd, a, l);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* ATM_GETADDR: the AESA in ATMSHIM_LOCAL, or none. */
static void get_addr(struct atmif_sioc *r)
{
    const char *e = getenv("ATMSHIM_LOCAL");
    struct sockaddr_atmsvc addr;
    int i;
    r->length = 0;
    if (!e || strlen(e) != 2 * ATM_ESA_LEN) return;
    if (!r->arg) return;
    memset(&addr, 0, sizeof(addr));
    addr.sas_family = PF_ATMSVC_;
    for (i = 0; i < ATM_ESA_LEN; i++) {
        int h = hexval(e[2 * i]), lo = hexval(e[2 * i + 1]);
        if (h < 0 || lo < 0) return;
        addr.sas_addr.prv[i] = (unsigned char) (h << 4 | lo);
    }
    memcpy(r->arg, &addr, sizeof(addr));
    r->length = sizeof(addr);
}

int connect(int fd, const struct sockaddr *a, socklen_t l)
{
    static int (*real)(int, const struct sockaddr *, socklen_t);
    if (shim(fd)) return 0;
    if (!real) real = dlsym(RTLD_NEXT, "connect");
    return real(fd, a, l);
}

static int read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = real_read(fd, (char *) buf + got, n - got);
        if (r <= 0) return r < 0 ? -1 : (int) got;
        got += r;
    }
    return (int) got;
}

ssize_t read(int fd, void *buf, size_t count)
{
    init();
    if (!shim(fd)) return real_read(fd, buf, count);
    uint32_t be;
    int r = read_full(fd, &be, 4);
    if (r <= 0) return r;
    if (r < 4) return 0;
    size_t len = ntohl(be);
    unsigned char *tmp = malloc(len ? len : 1);
    if (!tmp) { errno = ENOMEM; return -1; }
    r = read_full(fd, tmp, len);
    if (r < 0) { free(tmp); return -1; }
    size_t n = (size_t) r < count ? (size_t) r : count;
    memcpy(buf, tmp, n);
    free(tmp);
    return (ssize_t) n;
}

ssize_t write(int fd, const void *buf, size_t count)
{
    init();
    if (!shim(fd)) return real_write(fd, buf, count);
    if (out_fd[fd] < 0) return (ssize_t) count;
    uint32_t be = htonl((uint32_t) count);
    if (real_write(out_fd[fd], &be, 4) != 4) return -1;
    return real_write(out_fd[fd], buf, count);
}

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    init();
    if (!shim(fd)) return real_ioctl(fd, req, arg);
    if (req == SIOCGSTAMP) {
        gettimeofday((struct timeval *) arg, NULL);
        return 0;
    }
    if (req == ATM_GETLINKRATE) {
        struct atmif_sioc *r = arg;
        const char *e = getenv("ATMSHIM_LINKRATE");
        if (r->arg && r->length >= (int) sizeof(int))
            *(int *) r->arg = e ? atoi(e) : 353207;
        r->length = sizeof(int);
        return 0;
    }
    if (req == ATM_GETADDR) {
        struct atmif_sioc *r = arg;
        if (r->length >= (int) sizeof(struct sockaddr_atmsvc)) get_addr(r);
        else r->length = 0;
        return 0;
    }
    return 0;
}

int close(int fd)
{
    init();
    if (shim(fd)) {
        is_atm[fd] = 0;
        if (out_fd[fd] >= 0) real_close(out_fd[fd]);
    }
    return real_close(fd);
}
