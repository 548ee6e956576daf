#!/usr/bin/env python3
"""libatm as the oracle for natm's QoS and address text formats.

linux-atm's libatm (Debian package libatm1) exports text2qos/qos2text and
text2atm/atm2text; they need no kernel ATM support, so ctypes can call them. This script
builds a corpus of QoS and address strings (hand-written edge cases, grammar-generated
strings and mutations of them, all from a fixed seed) and asks libatm about each one.

Usage:
  libatm_oracle.py            write the golden files under crates/natm-core/tests/data/
  libatm_oracle.py --check BIN
                              run `BIN qos parse --batch` / `BIN addr parse --batch` on the
                              corpus and compare with the live library, field by field;
                              also feed natm's canonical text back to libatm. Exits 1 and
                              prints every disagreement.

Python 3 standard library only.
"""

import ctypes
import ctypes.util
import json
import os
import random
import struct
import subprocess
import sys

SEED = 0x4E41544D  # "NATM"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "crates", "natm-core", "tests", "data")

# linux/atm.h and atm.h
ATM_NONE, ATM_UBR, ATM_CBR, ATM_VBR, ATM_ABR = 0, 1, 2, 3, 4
ATM_NO_AAL, ATM_AAL0, ATM_AAL5 = 0, 13, 5
ATM_MAX_PCR = -1
AF_ATMPVC, AF_ATMSVC = 8, 20
T2A_PVC, T2A_SVC, T2A_UNSPEC, T2A_WILDCARD, T2A_NNI = 1, 2, 4, 8, 16
A2T_PRETTY = 1
SIZEOF_QOS = 84  # struct atm_qos on x86-64: txtp at 0, rxtp at 40, aal at 80
SYNTAX_FLAGS = {
    "default": T2A_PVC | T2A_SVC | T2A_UNSPEC | T2A_WILDCARD,
    "nni": T2A_PVC | T2A_SVC | T2A_UNSPEC | T2A_WILDCARD | T2A_NNI,
    "exact": T2A_PVC | T2A_SVC,
}
SYNTAX_CLI = {"default": [], "nni": ["--nni"], "exact": ["--exact"]}
CLASS_NAMES = {ATM_NONE: "none", ATM_UBR: "ubr", ATM_CBR: "cbr", ATM_VBR: "vbr", ATM_ABR: "abr"}
AAL_NAMES = {ATM_NO_AAL: "none", ATM_AAL0: "aal0", ATM_AAL5: "aal5"}


# --------------------------------------------------------------------------- the library

def load_libatm():
    name = ctypes.util.find_library("atm") or "libatm.so.1"
    lib = ctypes.CDLL(name)
    for f in ("text2qos", "qos2text", "text2atm", "atm2text"):
        getattr(lib, f).restype = ctypes.c_int
    # libatm's callers are C programs in the C locale; Python may have set another one.
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.setlocale.restype = ctypes.c_char_p
    libc.setlocale(0, b"C")  # LC_CTYPE
    return lib


def libatm_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libatm1"],
                             capture_output=True, text=True, check=False).stdout
        return "libatm1 " + out.strip() if out.strip() else "libatm1 (version unknown)"
    except OSError:
        return "libatm1 (version unknown)"


def rate_json(v):
    return "max" if v == ATM_MAX_PCR else v


def trafprm(raw, off):
    cls = raw[off]
    max_pcr, pcr, min_pcr, max_cdv, max_sdu = struct.unpack_from("<5i", raw, off + 4)
    return {
        "traffic_class": CLASS_NAMES.get(cls, cls),
        "max_pcr": rate_json(max_pcr),
        "pcr": rate_json(pcr),
        "min_pcr": min_pcr,
        "max_cdv": max_cdv,
        "max_sdu": max_sdu,
    }


def lib_text2qos(lib, text):
    buf = ctypes.create_string_buffer(SIZEOF_QOS)
    if lib.text2qos(text.encode("utf-8"), buf, 0) < 0:
        return None, None
    raw = buf.raw
    value = {"aal": AAL_NAMES.get(raw[80], raw[80]), "txtp": trafprm(raw, 0), "rxtp": trafprm(raw, 40)}
    return value, buf


def lib_qos2text(lib, buf):
    out = ctypes.create_string_buffer(256)
    if lib.qos2text(out, 256, buf, 0) < 0:
        return None
    return out.value.decode("utf-8")


def qos_value(lib, text):
    """(value, qos2text output, whether that output reads back to the same value)."""
    value, buf = lib_text2qos(lib, text)
    if value is None:
        return None, None, False
    printed = lib_qos2text(lib, buf)
    back = lib_text2qos(lib, printed)[0] if printed is not None else None
    return value, printed, back == value


def nsap_digits(text, pub):
    """How many hex digits of the AESA the text gives (for a '/bits' prefix)."""
    part = text.rsplit("+", 1)[1] if pub else text
    part = part.split("/", 1)[0]
    if ":" in part:
        return 18 + sum(c in "0123456789abcdefABCDEF" for c in part.split(":", 1)[1])
    return sum(c in "0123456789abcdefABCDEF" for c in part)


def sel_json(v):
    return {-1: "*", -2: "?"}.get(v, v)


def lib_text2atm(lib, text, flags):
    buf = ctypes.create_string_buffer(64)
    r = lib.text2atm(text.encode("utf-8"), buf, 64, flags)
    if r < 0:
        return None, None
    raw = buf.raw
    family = struct.unpack_from("<H", raw, 0)[0]
    if family == AF_ATMPVC:
        itf, vpi, vci = struct.unpack_from("<hhi", raw, 4)
        return {"kind": "pvc", "itf": sel_json(itf), "vpi": sel_json(vpi), "vci": sel_json(vci)}, buf
    prv = bytearray(raw[4:24])
    pub = raw[24:37].split(b"\0", 1)[0].decode("ascii")
    prefix_len = None
    if "/" in text:
        # A wildcard prefix: text2atm returns its length. libatm leaves in the rest of prv
        # whatever an earlier parse attempt wrote; natm keeps zeros there.
        prefix_len = r
        digits = nsap_digits(text, pub)
        for i in range(digits, 40):
            prv[i // 2] &= 0xF0 if i % 2 else 0x0F
        prv_hex = prv.hex()
    else:
        # No private part is stored as prv[0] == 0 (libatm's atmsvc_addr_in_use).
        prv_hex = prv.hex() if prv[0] else ""
    return {"kind": "svc", "prv": prv_hex, "pub": pub, "prefix_len": prefix_len}, buf


def lib_atm2text(lib, buf):
    out = ctypes.create_string_buffer(256)
    if lib.atm2text(out, 256, buf, A2T_PRETTY) < 0:
        return None
    return out.value.decode("utf-8")


def addr_value(lib, text, syntax):
    flags = SYNTAX_FLAGS[syntax]
    value, buf = lib_text2atm(lib, text, flags)
    if value is None:
        return None, None, False
    printed = lib_atm2text(lib, buf)
    back = lib_text2atm(lib, printed, flags)[0] if printed is not None else None
    return value, printed, back == value


def divergence(value):
    """Why natm must reject text libatm accepts (documented in natm_core::addr)."""
    if value is None or value["kind"] != "pvc":
        return None
    vci, vpi = value["vci"], value["vpi"]
    if isinstance(vci, int) and vci < 0:
        return "VCI overflows a C int: libatm stores it negative"
    if vpi == 4096:
        return "libatm's T2A_NNI limit ATM_MAX_VPI_NNI = 4096 is one too many"
    return None


# --------------------------------------------------------------------------- QoS corpus

QOS_HAND = [
    # from qos(7) and the fact sheet
    "ubr", "cbr", "abr", "UBR", "Cbr", "aBr", "ubr,aal5", "aal5,ubr", "cbr,aal0", "ubr,aal0,aal5",
    "ubr,cbr", "cbr,ubr,abr", "cbr,aal0:pcr=64kbps", "CBR:max_pcr=11Mbps,min_pcr=10mbps,sdu=8192",
    "ubr:pcr=100kbps", "cbr:max_pcr=11Mbps,min_pcr=10Mbps,sdu=8192",
    # classes that are not (vbr is a natm extension and excluded here)
    "", "none", "any", "aal5", "aal0", "aal0,aal5", "ubr,none", "ubx", "ubrx", "ubr,", ",ubr",
    "ubr,,aal5", "aal1", "ubr,aal1", "ubr,aal05", " ubr", "ubr ", "u br", "ubr\t", "\tubr",
    # params
    "ubr:", "ubr::", "ubr:pcr", "ubr:pcr=", "ubr:pcr=,", "ubr:pcr=1,", "ubr:pcr=1,,sdu=2",
    "ubr:pcr=0", "ubr:max_pcr=0", "ubr:PCR=1000", "ubr:Max_Pcr=1", "ubr:MIN_PCR=1", "ubr:SDU=9",
    "ubr:max_sdu=9,sdu=10", "ubr:sdu=10,max_sdu=9", "ubr:pcr=1,pcr=2,pcr=3",
    "ubr:max_pcr=1,pcr=2,min_pcr=3,max_sdu=4", "ubr:max_cdv=10", "ubr:cdv=10", "ubr:cdvt=10",
    "ubr:scr=10", "ubr:mbs=10", "ubr:foo=1", "ubr:pcr=1,foo=2", "ubr:pcr==1", "ubr:pcr:1",
    # max
    "ubr:max_pcr=max", "ubr:pcr=max", "ubr:min_pcr=max", "ubr:pcr=MAX", "ubr:pcr=Max",
    "ubr:PCR=max", "ubr:pcr=maxcps", "ubr:pcr=max,sdu=1", "ubr:pcr=maximum",
    "ubr:max_pcr=max,pcr=max,tx:max_pcr=1",
    # units and rounding
    "ubr:pcr=1cps", "ubr:pcr=1bps", "ubr:pcr=383bps", "ubr:pcr=384bps", "ubr:pcr=385bps",
    "ubr:min_pcr=1bps", "ubr:min_pcr=384bps", "ubr:min_pcr=385bps", "ubr:min_pcr=0bps",
    "ubr:pcr=1kbps", "ubr:pcr=1Kbps", "ubr:pcr=1mbps", "ubr:pcr=1Mbps", "ubr:pcr=1gbps",
    "ubr:pcr=1Gbps", "ubr:pcr=1kcps", "ubr:pcr=1Kcps", "ubr:pcr=1Mcps", "ubr:pcr=2Gcps",
    "ubr:pcr=3Gcps", "ubr:pcr=1KBPS", "ubr:pcr=1kBps", "ubr:pcr=1CPS", "ubr:pcr=1k",
    "ubr:pcr=1M", "ubr:pcr=1kb", "ubr:pcr=1kcp", "ubr:pcr=10cp", "ubr:pcr=1x", "ubr:pcr=1xy",
    "ubr:pcr=1xyz", "ubr:pcr=1k,sdu=1", "ubr:pcr=1kcps,sdu=1", "ubr:pcr=1T", "ubr:pcr=1Tbps",
    "ubr:pcr=1.5Mbps", "ubr:pcr=1.5kcps", "ubr:pcr=.5kcps", "ubr:pcr=kcps", "ubr:pcr=kbps",
    "ubr:pcr=1.", "ubr:pcr=.", "ubr:pcr=1.12345678", "ubr:pcr=1.123456789",
    "ubr:pcr=0.12345678Gcps", "ubr:pcr=1.999999999Gcps", "ubr:pcr=2.147483647Gcps",
    "ubr:pcr=2.147483648Gcps", "ubr:pcr=135.63Mbps", "ubr:min_pcr=135.63Mbps",
    "ubr:pcr=353207", "ubr:pcr=1.1.1", "ubr:pcr=1e3",
    # overflow, signs, whitespace (C strtoul/strtol)
    "ubr:pcr=2147483647", "ubr:pcr=2147483648", "ubr:pcr=4294967295", "ubr:pcr=4294967296",
    "ubr:pcr=4294967297cps", "ubr:pcr=18446744073709551615", "ubr:pcr=18446744073709551616",
    "ubr:pcr=99999999999999999999999", "ubr:pcr=-1", "ubr:pcr=-0", "ubr:pcr=-2147483649",
    "ubr:pcr=-18446744073709551615", "ubr:pcr=-18446744073709551616", "ubr:pcr=+100",
    "ubr:pcr=++1", "ubr:pcr=+-1", "ubr:pcr= 100", "ubr:pcr=\t100", "ubr:pcr=\n7",
    "ubr:pcr= ", "ubr:pcr= kcps", "ubr:pcr=1 cps", "ubr:pcr=0x10", "ubr:pcr=010",
    "ubr:pcr=4294967kcps", "ubr:pcr=4294968kcps", "ubr:pcr=4294967.999kcps",
    "ubr:pcr=4294967.295kcps", "ubr:pcr=4Gcps", "ubr:pcr=4.294967295Gcps", "ubr:pcr=5Gcps",
    "ubr:min_pcr=4294967295bps", "ubr:min_pcr=4294966912bps", "ubr:min_pcr=824633720832bps",
    "ubr:pcr=824633720832bps", "ubr:pcr=824633720831bps",
    "ubr:sdu=0", "ubr:sdu=-1", "ubr:sdu=-0", "ubr:sdu=+5", "ubr:sdu= 5", "ubr:sdu=",
    "ubr:sdu=2147483647", "ubr:sdu=2147483648", "ubr:sdu=4294967296", "ubr:sdu=4294967297",
    "ubr:sdu=-4294967295", "ubr:sdu=-2147483648", "ubr:sdu=9223372036854775807",
    "ubr:sdu=9223372036854775808", "ubr:sdu=-9223372036854775808", "ubr:sdu=-9223372036854775809",
    "ubr:sdu=99999999999999999999", "ubr:sdu=-99999999999999999999", "ubr:sdu=1.5",
    "ubr:sdu=1k", "ubr:sdu=0x10", "ubr:max_sdu=65535", "ubr:sdu=65536",
    # directions
    "ubr,tx:none", "ubr,rx:none", "ubr,tx:pcr=1", "ubr:tx:none", "ubr:rx:none", "ubr:tx:none,",
    "ubr:rx:none,", "ubr:tx:none,rx:none", "ubr:rx:none,tx:none", "ubr:tx:nonerx:none",
    "ubr:tx:none,,rx:none", "ubr:tx:NONE", "ubr:TX:none", "ubr:Tx:None,Rx:pcr=1",
    "ubr:tx:pcr=1", "ubr:rx:pcr=1", "ubr:tx:pcr=1,rx:pcr=2", "ubr:rx:pcr=2,tx:pcr=1",
    "ubr:tx:pcr=1,tx:pcr=2", "ubr:rx:pcr=1,rx:pcr=2", "ubr:pcr=1,tx:pcr=2,rx:none",
    "ubr:pcr=5,tx:none,rx:none", "ubr:pcr=5,tx:none", "ubr:pcr=5,rx:none",
    "ubr:pcr=5,tx:none,rx:pcr=0", "ubr:pcr=5,tx:pcr=0,rx:none", "ubr:pcr=5,tx:pcr=0",
    "ubr:tx:pcr=1rx:pcr=2", "ubr:tx:", "ubr:tx", "ubr:rx", "ubr:rx:", "ubr:tx:pcr=1,",
    "ubr:tx:pcr=1,rx", "ubr:tx:pcr=1,rx:", "ubr:tx:pcr=1,foo", "ubr:rx:none,rx:none",
    "ubr:tx:none,tx:none", "ubr:tx:none,rx:none,", "ubr:tx:nonex", "ubr:tx:none rx:none",
    "ubr:txx:pcr=1", "ubr:tx :pcr=1", "ubr:tx:max_pcr=max,rx:max_pcr=max",
    "ubr:max_pcr=1,pcr=1,min_pcr=1,sdu=1,tx:max_pcr=2,rx:min_pcr=3",
    "abr,aal5:max_pcr=max,min_pcr=1Mbps,tx:sdu=9180,rx:sdu=1500",
    "cbr,aal0:pcr=1,tx:pcr=1,rx:pcr=1", "ubr:pcr=1,tx:pcr=1", "ubr:pcr=1,rx:pcr=2,tx:pcr=3",
    "ubr:tx:pcr=1,rx:none", "ubr:tx:none,rx:pcr=1,sdu=2", "ubr:tx:sdu=1,rx:none,",
    "ubr,aal5:tx:none,rx:max_pcr=max", "ubr:none", "ubr:pcr=1:sdu=2",
    # non-ASCII
    "ubr:pcr=１", "übr", "ubr:pcr=1\u00a0", "ubr:pér=1",
]

QOS_WORD_CASES = ["{}", "{}", "{}", "UPPER", "Title", "mixed"]


def case(rng, w):
    c = rng.choice(QOS_WORD_CASES)
    if c == "UPPER":
        return w.upper()
    if c == "Title":
        return w.title()
    if c == "mixed":
        return "".join(ch.upper() if rng.random() < 0.5 else ch for ch in w)
    return w


def rand_rate(rng, up=False):
    r = rng.random()
    if r < 0.08:
        return "max"
    if r < 0.12:
        return rng.choice(["MAX", "Max", "", "-1", " 5", "+5", "1.", ".5"])
    num = rng.choice([
        str(rng.randrange(0, 1000)), str(rng.randrange(0, 400000)), str(rng.randrange(0, 2**31)),
        str(rng.randrange(2**31 - 3, 2**31 + 3)), str(rng.randrange(2**32 - 3, 2**32 + 3)),
        str(rng.randrange(0, 10**20)), "0", str(rng.randrange(0, 10)),
    ])
    if rng.random() < 0.3:
        num += "." + "".join(rng.choice("0123456789") for _ in range(rng.randrange(0, 10)))
    if rng.random() < 0.15:
        # units libatm refuses, or a multiplier without a unit
        return num + rng.choice(["x", "k", "M", "Bps", "CPS", "cp", "kcp", "T"])
    mult = rng.choice(["", "", "k", "K", "m", "M", "g", "G"])
    unit = rng.choice(["cps", "bps"]) if mult else rng.choice(["", "", "cps", "bps"])
    return num + mult + unit


def rand_param(rng):
    key = rng.choice(["max_pcr", "pcr", "min_pcr", "max_sdu", "sdu", "pcr", "max_pcr"])
    if key in ("max_sdu", "sdu"):
        v = rng.choice([str(rng.randrange(0, 70000)), str(rng.randrange(-2**33, 2**33)),
                        str(rng.randrange(0, 10**20)), "", "-0", "+9"])
    else:
        v = rand_rate(rng, key == "min_pcr")
    return case(rng, key) + "=" + v


def rand_params(rng):
    return ",".join(rand_param(rng) for _ in range(rng.randrange(1, 4)))


def rand_qos(rng):
    items = [rng.choice(["ubr", "cbr", "abr"])]
    for _ in range(rng.randrange(0, 3)):
        items.insert(rng.randrange(0, len(items) + 1), rng.choice(["ubr", "cbr", "abr", "aal0", "aal5"]))
    s = ",".join(case(rng, w) for w in items)
    sections = []
    if rng.random() < 0.6:
        sections.append(rand_params(rng))
    if rng.random() < 0.4:
        sections.append(case(rng, "tx") + ":" + (case(rng, "none") if rng.random() < 0.3 else rand_params(rng)))
    if rng.random() < 0.4:
        sections.append(case(rng, "rx") + ":" + (case(rng, "none") if rng.random() < 0.3 else rand_params(rng)))
    if sections:
        s += ":" + ",".join(sections)
    return s


MUTATION_CHARS = "ubrcatxpmnsdkMGg0123456789.,:=+- \t?*/_"


def mutate(rng, s, alphabet=MUTATION_CHARS):
    s = list(s)
    for _ in range(rng.randrange(1, 3)):
        op = rng.randrange(6)
        i = rng.randrange(0, len(s) + 1)
        if op == 0 and s:
            del s[min(i, len(s) - 1)]
        elif op == 1:
            s.insert(i, rng.choice(alphabet))
        elif op == 2 and s:
            j = min(i, len(s) - 1)
            s[j] = s[j].swapcase()
        elif op == 3 and s:
            j = rng.randrange(0, len(s))
            k = rng.randrange(j, len(s) + 1)
            s[k:k] = s[j:k]
        elif op == 4:
            s.append(rng.choice([",", ":", " ", "x", ".", "0", "/8", "+"]))
        else:
            s.insert(0, rng.choice([" ", ",", ":", "0", "."]))
    return "".join(s)


def qos_corpus():
    rng = random.Random(SEED)
    out = list(QOS_HAND)
    generated = [rand_qos(rng) for _ in range(400)]
    out += generated
    out += [mutate(rng, rng.choice(generated + QOS_HAND[:60])) for _ in range(250)]
    seen, corpus = set(), []
    for s in out:
        # vbr is natm's extension; libatm rejects it, so it has its own tests.
        if s not in seen and "vbr" not in s.lower() and "\0" not in s:
            seen.add(s)
            corpus.append(s)
    return corpus


# --------------------------------------------------------------------------- address corpus

AESA = "47.0005.80ffe1000000f21a3502.0020481a3502.00"
ADDR_HAND = [
    # PVC
    "0.5", "0.0.5", "1.0.5", "0.35", "0.0.32", "8.35", "255.65535", "0.255.65535", "0.256.5",
    "256.1", "255.65536", "32767.0.1", "32768.0.1", "32767.255.65535", "0.4095.1", "0.4096.1",
    "*.*", "?.?", "*.?", "?.*", "*.*.*", "?.?.?", "?.5", "5.?", "*.5", "1.?.5", "1.*.*",
    "?.1.5", "*.1.5", "*.?.?", "**.5", "*5", "5*", "*.5.", "1.*x", "?x.5", "*.", "?", "*",
    "00.5", "0.05", "01.1.1", "0.0.0", "1.2.3.4", "1.2.3.4.5", "1.", ".1", "1..2", "..",
    ".", "1.2.", "5", "0", "2147483647.0.1", "2147483648.0.1", "2147483649.0.1",
    "2147483650.0.1", "0.2147483648.1", "0.2147483649.1", "0.0.2147483648", "0.0.2147483649",
    "0.0.2147483650", "2147483648.1", "1.2147483649", "21474836470.0.1", "4294967296.0.1",
    "-1.5", "+1.5", "1.-5", " 0.5", "0.5 ", "0. 5", "0.5\n", "1.2.3\t", "0x1.5", "١.٥",
    # AESA / NSAP
    AESA, AESA.upper(), AESA.replace(".", ""), "470005.80ffe1000000f21a3502.0020481a3502.00",
    "4.7.0.0.0.5.8.0.f.f.e.1.0.0.0.0.0.0.f.2.1.a.3.5.0.2.0.0.2.0.4.8.1.a.3.5.0.2.0.0",
    "39.840f.80ffe1000000f21a3502.0020481a3502.00", "49.840f.80ffe1000000f21a3502.0020481a3502.00",
    "45.000001234567890f.0000.0020481a3502.00", "c3000000000000000012345678901234567890ab",
    "bd.840f.80ffe1000000f21a3502.0020481a3502.00", "c5000580ffe1000000f21a35020020481a350200",
    "c7000580ffe1000000f21a35020020481a350200", "0a000580ffe1000000f21a35020020481a350200",
    "00.0005.80ffe1000000f21a3502.0020481a3502.00", "47000580ffe1000000f21a35020020481a35020",
    "47000580ffe1000000f21a35020020481a3502001", "47000580ffe1000000f21a35020020481a35020g",
    AESA + ".", "." + AESA, AESA.replace(".", "..", 1), AESA + " ", "47:0005",
    "45000000000000000012345678901234567890ab", "45000000000000000000000000000000000000ab",
    "450000000000001234567F000000000000000000", "4500000000000012345678000000000000000000",
    "45000000000000000000000000000000000000000", "4500000000000000001f000000000000000000ab",
    # E.164 AESA form
    "1234567:00000000.0020481a3502.00", "1234567:000000000020481a350200",
    "1234567:0000.0020481a3502.00", "0234567:00000000.0020481a3502.00", ":00000000.0020481a3502.00",
    "123456789012345:00000000.0020481a3502.00", "1234567890123456:00000000.0020481a3502.00",
    "1:0000000000000000000000", "1:.0000000000000000000000", "1.2:0000000000000000000000",
    "1234567:00000000.0020481a3502.00/72", "1234567:00000000.0020481a3502.00/71",
    "1234567:00000000.0020481a3502.00/160", "1234567:00000000.0020481a3502.00/161",
    "1234567:00000000/72", "1234567:0/72", "1234567:0/76", "1234567:0/77",
    # prefixes
    "47.0005/16", "47.0005/8", "47.0005/7", "47.0005/72", "47/4", "47/8", "47/9", "47/0",
    "47/", "47//4", "47/4x", "47/-1", "47/ 4", "0/0", "0/1", "0/4", "0/5", "00/0", "1/1",
    "45/9", "45/8", "45.00/9", "45.00/16", "4/4", AESA + "/", AESA + "/0", AESA + "/7",
    AESA + "/8", AESA + "/71", AESA + "/72", AESA + "/152", AESA + "/160", AESA + "/161",
    AESA + "/999999", AESA + "./8", AESA + "/8.", "47.0005.80ffe1/72", "47.0005.80ffe1/56",
    "47000580ffe1000000/72", "470005.80ffe1000000.f21a/4",
    # E.164
    "+1234", "1234", "+12.34", "12.34", "+", "+.", "+1.", "+.1", "+1..2", "123456789012",
    "+123456789012", "1234567890123", "+1234567890123", "+0", "0", "+000", ":1234",
    "++1234", "+12a", "+1234+", "+1234+" + AESA, "1234+" + AESA, "1234+" + AESA.upper(),
    "+1234+47/4", "1234+47/4", "+1234+47.0005/7", "+12+0/0", "+12+0/1", "+1234+" + AESA + "/8",
    "+1234+1234567:00000000.0020481a3502.00", "+1234+00.0005", "+1234+" + AESA + "x",
    "1234+", "1234++" + AESA, "+123456789012+" + AESA, "+1234567890123+" + AESA,
    "41215551234", "+41.21.555.1234",
    # other
    "", " ", "localhost", "hostname.example", "atm0", "abc", "bad", "+x", "é", "1.2.é",
]

ADDR_EXTRA_SYNTAX = [
    ("nni", "0.4095.5"), ("nni", "0.4096.5"), ("nni", "0.4097.5"), ("nni", "1.300.5"),
    ("nni", "300.5"), ("nni", "1.*.?"), ("nni", "0.256.1"), ("nni", AESA),
    ("exact", "0.5"), ("exact", "*.5"), ("exact", "?.5"), ("exact", "1.*.*"), ("exact", "47/4"),
    ("exact", AESA), ("exact", AESA + "/8"), ("exact", "+1234+47/4"), ("exact", "+1234"),
    ("exact", "0/0"), ("exact", "0.0.2147483648"), ("exact", "256.1"),
]


def rand_pvc(rng):
    def part():
        r = rng.random()
        if r < 0.1:
            return rng.choice(["*", "?"])
        return rng.choice([
            str(rng.randrange(0, 10)), str(rng.randrange(0, 300)), str(rng.randrange(0, 70000)),
            str(rng.choice([255, 256, 4095, 4096, 32767, 32768, 65535, 65536])),
            str(rng.randrange(2147483640, 2147483660)), "0" + str(rng.randrange(0, 10)),
        ])
    return ".".join(part() for _ in range(rng.choice([2, 2, 3, 3, 3, 1, 4])))


def rand_hex(rng, n):
    return "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(n))


def dotted(rng, s):
    if rng.random() < 0.3:
        return s
    out = []
    for i, c in enumerate(s):
        if i and rng.random() < 0.15:
            out.append(".")
        out.append(c)
    return "".join(out)


def rand_nsap(rng):
    r = rng.random()
    if r < 0.25:
        digits = rng.choice(["", "1", "12", "1234567", "0234", "123456789012345", "1234567890123456"])
        body = rand_hex(rng, rng.choice([22, 22, 21, 23, 2]))
        s = digits + ":" + dotted(rng, body)
    else:
        afi = rng.choice(["39", "45", "47", "49", "c3", "bd", "c5", "c7", "00", "0a", "ff", "12"])
        s = dotted(rng, afi + rand_hex(rng, rng.choice([38, 38, 38, 37, 39, 36, 0, 2])))
    if rng.random() < 0.3:
        if r >= 0.25 and rng.random() < 0.5:
            s = s[: rng.randrange(1, len(s) + 1)].rstrip(".") or "4"
        s += "/" + str(rng.choice([0, 1, 4, 7, 8, 9, 16, 71, 72, 73, 100, 152, 160, 161]))
    return s


def rand_e164(rng):
    digits = "".join(rng.choice("0123456789") for _ in range(rng.choice([1, 4, 7, 11, 12, 13, 15])))
    s = rng.choice(["", "+", "+", ":"]) + dotted(rng, digits)
    if rng.random() < 0.35:
        s += "+" + rand_nsap(rng)
    return s


def addr_corpus():
    rng = random.Random(SEED + 1)
    out = [("default", s) for s in ADDR_HAND]
    generated = [rng.choice([rand_pvc, rand_nsap, rand_e164])(rng) for _ in range(300)]
    out += [("default", s) for s in generated]
    out += [("default", mutate(rng, rng.choice(generated + ADDR_HAND), "0123456789abcdefAF.:+*?/ xg"))
            for _ in range(200)]
    out += ADDR_EXTRA_SYNTAX
    seen, corpus = set(), []
    for syntax, s in out:
        if (syntax, s) not in seen and "\0" not in s:
            seen.add((syntax, s))
            corpus.append((syntax, s))
    return corpus


# --------------------------------------------------------------------------- golden files

def golden_qos(lib):
    entries = []
    for text in qos_corpus():
        value, printed, roundtrip = qos_value(lib, text)
        e = {"text": text, "ok": value is not None}
        if value is not None:
            e.update(value=value, qos2text=printed, qos2text_roundtrip=roundtrip)
        entries.append(e)
    return entries


def golden_addr(lib):
    entries = []
    for syntax, text in addr_corpus():
        value, printed, roundtrip = addr_value(lib, text, syntax)
        e = {"text": text, "syntax": syntax, "ok": value is not None}
        if value is not None:
            e.update(value=value, atm2text=printed, atm2text_roundtrip=roundtrip)
            why = divergence(value)
            if why:
                e["natm_rejects"] = why
        entries.append(e)
    return entries


def write_golden(lib):
    os.makedirs(DATA, exist_ok=True)
    meta = {
        "generator": "tests/oracle/libatm_oracle.py (seed %#x)" % SEED,
        "library": libatm_version(),
    }
    for name, entries in (("libatm_qos.json", golden_qos(lib)), ("libatm_addr.json", golden_addr(lib))):
        path = os.path.join(DATA, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dict(meta, entries=entries), f, ensure_ascii=False, indent=0)
            f.write("\n")
        ok = sum(e["ok"] for e in entries)
        print("%s: %d strings, %d accepted, %d rejected" % (path, len(entries), ok, len(entries) - ok))


# --------------------------------------------------------------------------- live check

def run_batch(binary, command, flags, texts):
    stdin = "".join(json.dumps(t) + "\n" for t in texts)
    args = [command, "parse", "--batch"] + flags
    p = subprocess.run([binary] + args, input=stdin, capture_output=True,
                       encoding="utf-8", check=False)
    if p.returncode != 0:
        raise SystemExit("%s %s failed (%d): %s" % (binary, " ".join(args), p.returncode, p.stderr))
    lines = p.stdout.splitlines()
    if len(lines) != len(texts):
        raise SystemExit("%s: %d results for %d inputs" % (binary, len(lines), len(texts)))
    return [json.loads(l) for l in lines]


def check_qos(lib, binary, problems):
    corpus = qos_corpus()
    results = run_batch(binary, "qos", [], corpus)
    agree = 0
    for text, got in zip(corpus, results):
        value, printed, roundtrip = qos_value(lib, text)
        bad = []
        if (value is not None) != got["ok"]:
            bad.append("libatm %s, natm %s" % ("accepts %s" % json.dumps(value) if value else "rejects",
                                               "accepts %s" % json.dumps(got.get("value")) if got["ok"] else "rejects: " + got["error"]))
        elif value is not None:
            if got["value"] != value:
                bad.append("fields differ: libatm %s, natm %s" % (json.dumps(value), json.dumps(got["value"])))
            if roundtrip and got["text"] != printed:
                bad.append("canonical text: qos2text %r, natm %r" % (printed, got["text"]))
            back = lib_text2qos(lib, got["text"])[0]
            if back != value:
                bad.append("libatm reads natm's text %r as %s" % (got["text"], json.dumps(back)))
        if bad:
            problems.append("qos %r: %s" % (text, "; ".join(bad)))
        else:
            agree += 1
    return len(corpus), agree


def check_addr(lib, binary, problems):
    corpus = addr_corpus()
    agree = 0
    for syntax in SYNTAX_FLAGS:
        texts = [t for s, t in corpus if s == syntax]
        results = run_batch(binary, "addr", SYNTAX_CLI[syntax], texts) if texts else []
        for text, got in zip(texts, results):
            value, printed, roundtrip = addr_value(lib, text, syntax)
            why = divergence(value)
            bad = []
            if why:
                if got["ok"]:
                    bad.append("natm should reject (%s) but accepts %s" % (why, json.dumps(got["value"])))
            elif (value is not None) != got["ok"]:
                bad.append("libatm %s, natm %s" % ("accepts %s" % json.dumps(value) if value else "rejects",
                                                   "accepts %s" % json.dumps(got.get("value")) if got["ok"] else "rejects: " + got["error"]))
            elif value is not None:
                if got["value"] != value:
                    bad.append("fields differ: libatm %s, natm %s" % (json.dumps(value), json.dumps(got["value"])))
                if roundtrip and value.get("prefix_len") is None and got["text"] != printed:
                    bad.append("canonical text: atm2text %r, natm %r" % (printed, got["text"]))
                back = lib_text2atm(lib, got["text"], SYNTAX_FLAGS[syntax])[0]
                if back != value:
                    bad.append("libatm reads natm's text %r as %s" % (got["text"], json.dumps(back)))
            if bad:
                problems.append("addr[%s] %r: %s" % (syntax, text, "; ".join(bad)))
            else:
                agree += 1
    return len(corpus), agree


def check_cli(binary, problems):
    """The documented single-shot interface: JSON on stdout, exit 2 and one line on error."""
    cases = [
        (["qos", "parse", "cbr:max_pcr=10Mbps,sdu=8192"], 0, "cbr:max_pcr=26041,max_sdu=8192"),
        (["qos", "parse", "ubx"], 2, None),
        (["addr", "parse", "0.35"], 0, "0.0.35"),
        (["addr", "parse", "0.0.70000x"], 2, None),
    ]
    for args, code, out in cases:
        p = subprocess.run([binary] + args, capture_output=True, encoding="utf-8", check=False)
        if p.returncode != code or (out is not None and p.stdout != out + "\n") or \
                (code != 0 and (p.stdout or p.stderr.count("\n") != 1)):
            problems.append("cli %s: exit %d, stdout %r, stderr %r" % (args, p.returncode, p.stdout, p.stderr))
    p = subprocess.run([binary, "qos", "parse", "--json", "ubr:pcr=max,rx:none"], capture_output=True,
                       encoding="utf-8", check=False)
    want = {"aal": "none",
            "txtp": {"traffic_class": "ubr", "max_pcr": 0, "pcr": "max", "min_pcr": 0, "max_cdv": 0, "max_sdu": 0},
            "rxtp": {"traffic_class": "none", "max_pcr": 0, "pcr": "max", "min_pcr": 0, "max_cdv": 0, "max_sdu": 0}}
    if p.returncode != 0 or json.loads(p.stdout or "null") != want:
        problems.append("cli qos --json: %r" % p.stdout)


def check_golden(lib):
    """Warn (only) when the committed golden files no longer match this library."""
    for name, fresh in (("libatm_qos.json", golden_qos), ("libatm_addr.json", golden_addr)):
        try:
            with open(os.path.join(DATA, name), encoding="utf-8") as f:
                stored = json.load(f)["entries"]
        except (OSError, ValueError, KeyError):
            print("note: %s missing or unreadable" % name, file=sys.stderr)
            continue
        if stored != fresh(lib):
            print("note: %s differs from this libatm; regenerate with %s" % (name, sys.argv[0]), file=sys.stderr)


def main(argv):
    lib = load_libatm()
    if len(argv) == 1:
        write_golden(lib)
        return 0
    if len(argv) == 3 and argv[1] == "--check":
        binary = argv[2]
        problems = []
        nq, aq = check_qos(lib, binary, problems)
        na, aa = check_addr(lib, binary, problems)
        check_cli(binary, problems)
        check_golden(lib)
        for p in problems:
            print("DISAGREE " + p)
        print("libatm oracle (%s): QoS %d/%d agree, addresses %d/%d agree" % (libatm_version(), aq, nq, aa, na))
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
