import Glibc
import VoiceboxCore
import VoiceboxSpawn
import XCTest

/// Files decode one per usable core: the count follows the process's affinity (taskset,
/// systemd's CPUAffinity=), not the machine's processors.
final class UsableCoresTests: XCTestCase {
    func testTheCountIsTheAffinityTheKernelReports() throws {
        // /proc's own reading of our mask, a hexadecimal "Cpus_allowed:\t00000000,00000003".
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed:") })
        let allowed = line.dropFirst("Cpus_allowed:".count).reduce(0) { $0 + ($1.hexDigitValue ?? 0).nonzeroBitCount }
        XCTAssertEqual(ProcessEnvironment.usableCores, min(allowed, ProcessEnvironment.onlineProcessors))
    }

    func testAProcessPinnedToOneCoreHasOne() throws {
        var spec = ChildSpec("taskset", ["-c", "0", "sleep", "30"])
        spec.searchPath = true
        let started = try Spawn.start(spec)
        defer { _ = started.child.end(within: .seconds(10)) }
        // taskset sets the mask, then becomes sleep: wait for the exec (at most 10 s).
        let comm = "/proc/\(started.child.pid)/comm"
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? String(contentsOfFile: comm, encoding: .utf8)) != "sleep\n", ContinuousClock.now < deadline {
            usleep(10_000)
        }
        XCTAssertEqual(try String(contentsOfFile: comm, encoding: .utf8), "sleep\n")
        XCTAssertEqual(ProcessEnvironment.usableCores(ofProcess: started.child.pid), 1)
        XCTAssertEqual(ProcessEnvironment.usableCores(ofProcess: -1), ProcessEnvironment.onlineProcessors,
                       "where the kernel will not say, the online count")
    }
}
