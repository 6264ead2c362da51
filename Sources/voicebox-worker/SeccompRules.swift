import CSeccomp
import Glibc

/// Adds one rule per system call name to a filter being built; nil, or the first failure named.
/// A name this architecture lacks is skipped. Shared by both confinements (Confinement,
/// ModuleConfinement), which differ only in which rules they add.
func addSeccompRules(to filter: scmp_filter_ctx, _ names: [String], _ action: UInt32,
                     _ comparisons: [scmp_arg_cmp] = []) -> String? {
    for name in names {
        let call = seccomp_syscall_resolve_name(name)
        guard call != __NR_SCMP_ERROR else { continue }
        var comparisons = comparisons
        let result = comparisons.withUnsafeMutableBufferPointer { buffer in
            seccomp_rule_add_array(filter, action, call, UInt32(buffer.count), buffer.baseAddress)
        }
        guard result == 0 else { return "seccomp: \(name): \(String(cString: strerror(-result)))" }
    }
    return nil
}
