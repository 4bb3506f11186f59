// Copyright Weft authors. The cgroup v2 device program, assembled by hand (as runc does).
#include "nm/devices/device_bpf.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace weft::nm {
namespace {

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn insn;
  std::memset(&insn, 0, sizeof(insn));
  insn.code = code;
  insn.dst_reg = dst & 0xf;
  insn.src_reg = src & 0xf;
  insn.off = off;
  insn.imm = imm;
  return insn;
}

long Bpf(int cmd, bpf_attr* attr) {
  return ::syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

absl::Status Errno(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  if (err == EPERM || err == EACCES) return absl::PermissionDeniedError(message);
  if (err == ENOENT) return absl::NotFoundError(message);
  return absl::FailedPreconditionError(message);
}

}  // namespace

std::vector<bpf_insn> DeviceDenyProgram(const std::vector<DeviceNumber>& denied) {
  // r1 = struct bpf_cgroup_dev_ctx *: access_type (u32, (access << 16) | type), major, minor.
  std::vector<bpf_insn> prog;
  prog.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0));  // access_type
  prog.push_back(Insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff));      // device type
  prog.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_3, BPF_REG_1, 4, 0));   // major
  prog.push_back(Insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 8, 0));   // minor
  for (const DeviceNumber& number : denied) {
    // Not this rule: skip its 5 instructions' remaining ones.
    prog.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 4, BPF_DEVCG_DEV_CHAR));
    prog.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 3, number.major));
    prog.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 2, number.minor));
    prog.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0));  // deny
    prog.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  }
  prog.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1));  // allow
  prog.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  return prog;
}

absl::Status AttachDeviceDenyProgram(const std::string& cgroup_dir,
                                     const std::vector<DeviceNumber>& denied) {
  const std::string context = absl::StrCat("cgroup v2 device program for ", cgroup_dir);
  std::vector<bpf_insn> prog = DeviceDenyProgram(denied);
  static const char kLicense[] = "Apache-2.0";
  std::string log(16384, '\0');
  bpf_attr load;
  std::memset(&load, 0, sizeof(load));
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insns = reinterpret_cast<uint64_t>(prog.data());
  load.insn_cnt = static_cast<uint32_t>(prog.size());
  load.license = reinterpret_cast<uint64_t>(kLicense);
  load.log_buf = reinterpret_cast<uint64_t>(log.data());
  load.log_size = static_cast<uint32_t>(log.size());
  load.log_level = 1;
  int prog_fd = static_cast<int>(Bpf(BPF_PROG_LOAD, &load));
  if (prog_fd < 0 && errno == ENOSPC) {  // the log did not fit: load again without one
    load.log_buf = 0;
    load.log_size = 0;
    load.log_level = 0;
    prog_fd = static_cast<int>(Bpf(BPF_PROG_LOAD, &load));
  }
  if (prog_fd < 0) {
    const int err = errno;
    return Errno(err, absl::StrCat(context, ": bpf(BPF_PROG_LOAD) (verifier: ",
                                   absl::StripAsciiWhitespace(log.c_str()), ")"));
  }
  const int cgroup_fd = ::open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup_fd < 0) {
    const int err = errno;
    ::close(prog_fd);
    return Errno(err, absl::StrCat(context, ": open"));
  }
  bpf_attr attach;
  std::memset(&attach, 0, sizeof(attach));
  attach.target_fd = static_cast<uint32_t>(cgroup_fd);
  attach.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  const long attached = Bpf(BPF_PROG_ATTACH, &attach);
  const int err = errno;
  ::close(cgroup_fd);
  ::close(prog_fd);  // the attachment keeps the program
  if (attached != 0) return Errno(err, absl::StrCat(context, ": bpf(BPF_PROG_ATTACH)"));
  return absl::OkStatus();
}

}  // namespace weft::nm
