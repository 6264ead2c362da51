@testable import TestSupport
import Glibc
import VoiceboxSpawn
import XCTest

/// The one way to start a child, against real programs: what it gets (descriptors, signal state,
/// working directory), what comes back (output, error, the end decoded), and that every wait is
/// bounded.
final class SpawnTests: XCTestCase {
    private func shell(_ script: String, timeout: Duration = .seconds(10), configure: (inout ChildSpec) -> Void = { _ in })
        throws -> Spawn.Ending {
        var spec = ChildSpec("/bin/sh", ["-c", script])
        spec.standardOutput = .pipe
        spec.standardError = .pipe
        configure(&spec)
        return try Spawn.run(spec, timeout: timeout)
    }

    func testOutputErrorAndExitStatusComeBackApart() throws {
        let ending = try shell("echo out; echo err >&2; exit 3")
        XCTAssertEqual(String(decoding: ending.output, as: UTF8.self), "out\n")
        XCTAssertEqual(ending.errorText, "err")
        XCTAssertEqual(ending.termination, .exited(3))
        XCTAssertEqual(ending.termination.shellStatus, 3)
        XCTAssertFalse(ending.timedOut)
    }

    func testASignalIsDecodedAndNamed() throws {
        for (signal, name) in [(SIGSEGV, "SIGSEGV"), (SIGABRT, "SIGABRT"), (SIGKILL, "SIGKILL")] {
            let ending = try shell("kill -\(signal) $$")
            XCTAssertEqual(ending.termination, .signalled(signal))
            XCTAssertEqual(ending.termination.shellStatus, 128 + signal)
            XCTAssert(ending.termination.description.contains(name), ending.termination.description)
        }
    }

    func testWaitStatusDecoding() {
        XCTAssertEqual(Termination(waitStatus: 0), .exited(0))
        XCTAssertEqual(Termination(waitStatus: 3 << 8), .exited(3))
        XCTAssertEqual(Termination(waitStatus: SIGSEGV), .signalled(SIGSEGV))
        XCTAssertEqual(Termination(waitStatus: 0x80 | SIGABRT), .signalled(SIGABRT), "the core-dump bit is not part of the signal")
        XCTAssertEqual(Termination.name(of: SIGTERM), "SIGTERM")
    }

    /// A child that outlives its bound is killed, and the caller is back: the run says it timed
    /// out, and the child died of SIGKILL (a 30 s sleep would otherwise have exited normally).
    func testTheRunIsBoundedAndAStuckChildKilled() throws {
        // exec: dash forks a lone command, and the sleep would outlive the shell we kill.
        let ending = try shell("exec sleep 30", timeout: .milliseconds(200))
        XCTAssert(ending.timedOut)
        XCTAssertEqual(ending.termination, .signalled(SIGKILL))
    }

    /// Input larger than a pipe holds, echoed back: input and output are fed and drained together.
    func testInputAndOutputLargerThanAPipe() throws {
        let input = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var spec = ChildSpec("/bin/cat")
        spec.standardOutput = .pipe
        let ending = try Spawn.run(spec, input: input, timeout: .seconds(10))
        XCTAssertEqual(ending.output.count, input.count)
        XCTAssert(ending.output == input)
        XCTAssertEqual(ending.termination, .exited(0))
    }

    /// A child that exits without reading its input (wl-copy with no display): the write fails
    /// with EPIPE instead of raising SIGPIPE, which ended the voicebox client (it does not ignore
    /// it) and lost the text it was keeping. Checked with SIGPIPE at its default action here.
    func testAChildThatReadsNothingDoesNotEndTheWriterWithSIGPIPE() throws {
        let previous = signal(SIGPIPE, SIG_DFL)
        defer { signal(SIGPIPE, previous) }
        let ending = try Spawn.run(ChildSpec("/bin/true"), input: [UInt8](repeating: 0x61, count: 1 << 20), timeout: .seconds(10))
        XCTAssertEqual(ending.termination, .exited(0))
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        close(ends[0])
        XCTAssertEqual(Spawn.writeWithoutSIGPIPE(ends[1], [1, 2, 3][...]), -1)
        XCTAssertEqual(errno, EPIPE)
        close(ends[1])
    }

    /// A program that leaves a background child holding its pipes (as xclip and speech-dispatcher's
    /// launcher do) does not hold the caller up: reading stops when the child itself exits.
    func testABackgroundGrandchildHoldingThePipeDoesNotHoldTheCaller() throws {
        // Had reading waited for the grandchild (5 s), the run would have met its 4 s bound.
        let ending = try shell("sleep 5 & echo started >&2", timeout: .seconds(4))
        XCTAssertFalse(ending.timedOut)
        XCTAssertEqual(ending.errorText, "started")
        // untilPipesClose waits for the grandchild too, bounded by the timeout.
        var spec = ChildSpec("/bin/sh", ["-c", "sleep 5 & echo started >&2"])
        spec.standardError = .pipe
        let bounded = try Spawn.run(spec, timeout: .milliseconds(300), untilPipesClose: true)
        XCTAssert(bounded.timedOut)
        XCTAssertEqual(bounded.termination, .exited(0))
    }

    /// Whatever the spawning thread blocks and the process ignores, the child starts clean.
    func testTheChildStartsWithACleanSignalState() throws {
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        sigaddset(&blocked, SIGUSR1)
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        let oldUSR2 = Glibc.signal(SIGUSR2, SIG_IGN)
        let oldRealTime = Glibc.signal(40, SIG_IGN)
        defer {
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            Glibc.signal(SIGUSR2, oldUSR2)
            Glibc.signal(40, oldRealTime)
        }
        var spec = ChildSpec("/bin/cat", ["/proc/self/status"])
        spec.standardOutput = .pipe
        let status = String(decoding: try Spawn.run(spec, timeout: .seconds(10)).output, as: UTF8.self)
        let lines = status.split(separator: "\n").filter { $0.hasPrefix("SigBlk:") || $0.hasPrefix("SigIgn:") }
        XCTAssertEqual(lines.count, 2)
        // Every signal but glibc's own two (32 and 33, bits 0x180000000), which it keeps for itself.
        for line in lines {
            let mask = UInt64(line.split(separator: "\t").last ?? "", radix: 16) ?? .max
            XCTAssertEqual(mask & ~0x1_8000_0000, 0, String(line))
        }
    }

    func testAWorkingDirectoryOfItsOwn() throws {
        let directory = "/tmp/voicebox-spawn-\(getpid())"
        mkdir(directory, 0o700)
        defer { rmdir(directory) }
        var spec = ChildSpec("/bin/pwd")
        spec.standardOutput = .pipe
        spec.workingDirectory = directory
        XCTAssertEqual(String(decoding: try Spawn.run(spec, timeout: .seconds(10)).output, as: UTF8.self), directory + "\n")
        spec.workingDirectory = directory + "/missing"
        XCTAssertThrowsError(try Spawn.run(spec, timeout: .seconds(10))) { error in
            XCTAssertEqual((error as? SpawnError)?.errno.code, ENOENT)
        }
    }

    func testAMissingProgramIsAnError() {
        XCTAssertThrowsError(try Spawn.run(ChildSpec("/nonexistent/program"), timeout: .seconds(10))) { error in
            XCTAssertEqual("\(error)", "cannot run /nonexistent/program: No such file or directory")
        }
    }

    /// The child gets the descriptors it is given, at the numbers it is given, and no other of ours.
    func testDescriptorsAreHandedOverByNumberAndNoOthers() throws {
        var first: [Int32] = [-1, -1], second: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&first), 0)
        XCTAssertEqual(pipe(&second), 0)  // neither close-on-exec: only the spec keeps them from the child
        defer { (first + second).forEach { close($0) } }
        // Ours crossed over (second's write end to its 3, first's to its 4): neither overwrites the other.
        let script = "echo three >&3; echo four >&4; [ -e /proc/self/fd/\(first[1]) ] || [ -e /proc/self/fd/\(second[1]) ]"
        let ending = try shell(script) { spec in spec.descriptors = [3: second[1], 4: first[1]] }
        close(first[1]); close(second[1])
        XCTAssertEqual(ending.termination, .exited(1), "the writers are not also inherited under their own numbers: \(ending.errorText)")
        XCTAssertEqual(readAll(second[0]), "three\n")
        XCTAssertEqual(readAll(first[0]), "four\n")
        first[1] = -1; second[1] = -1
    }

    func testAChildIsWatchedThroughItsPidfdAndKilledWhenDropped() async throws {
        var spec = ChildSpec("/bin/sleep", ["0.1"])
        let short = try Spawn.start(spec).child
        let ended = await short.exited()
        XCTAssertEqual(ended, .exited(0))
        XCTAssertEqual(short.termination, .exited(0))

        spec.arguments = ["30"]
        var long: Child? = try Spawn.start(spec).child
        let pid = long!.pid
        XCTAssertNil(long!.wait(timeout: .milliseconds(50)))
        XCTAssertNil(long!.termination)
        long = nil
        XCTAssertEqual(kill(pid, 0), -1, "dropped: killed and reaped")
        XCTAssertEqual(errno, ESRCH)

        let stuck = try Spawn.start(spec).child
        let (termination, killed) = stuck.end(within: .milliseconds(50))
        XCTAssert(killed)
        XCTAssertEqual(termination, .signalled(SIGKILL))
        stuck.signal(SIGTERM)  // after the reap: a no-op, never another process's
    }

    private func readAll(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let count = read(fd, &buffer, buffer.count), count > 0 { bytes += buffer[0..<count] }
        return String(decoding: bytes, as: UTF8.self)
    }
}
