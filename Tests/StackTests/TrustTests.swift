import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxDaemon
import XCTest

/// What a caller can make the service read: a file it passes open (option fd, as desktop portals
/// pass files), and from inside an app sandbox nothing by path.
final class TrustTests: ServiceTestCase {
    override class var sharesService: Bool { true }

    func testAFilePassedOpenIsRecognizedAndItsDescriptorReleased() async throws {
        let wav = try Recordings.wav("goforward.raw", in: FileManager.default.temporaryDirectory)
        let fd = open(wav, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        try await service.waitUntilSettled()
        let before = try descriptorCount(service.daemon.pid)
        let reply = try await service.proxy.call(Speech1.recognize, VarDict(["fd": .unixFD(fd)]), timeout: .seconds(60))
        XCTAssertEqual(reply.text, "go forward ten meters")
        XCTAssertEqual(reply.details["reason"], .string("end_of_file"))
        XCTAssertEqual(lseek(fd, 0, SEEK_CUR), 0, "the caller's own file offset is left alone")
        let pid = service.daemon.pid
        var open: [String] = []
        try await waitUntil("the passed descriptor closed") {
            open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? [])
                .compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
            return !open.contains(wav)
        }
        // Each warm decoder worker holds a socket and a pidfd of voiceboxd's.
        let warm = ServiceProcesses.decoderWorkers(of: pid).count
        XCTAssertLessThanOrEqual(try descriptorCount(pid), before + 2 + 2 * warm, "nothing else is left open: \(open)")
    }

    func testADescriptorThatIsNoRegularFileIsRefused() async throws {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]); close(ends[1]) }
        do {
            _ = try await service.proxy.call(Speech1.recognize, VarDict(["fd": .unixFD(ends[0])]))
            XCTFail("a pipe was read")
        } catch {
            XCTAssertEqual(error.name, "org.voicebox.Error.UnreadableFile", error.message)
            XCTAssertTrue(error.message.contains("the file passed as a descriptor"), error.message)
        }
    }

    /// A caller inside a Flatpak sandbox (bubblewrap with /.flatpak-info, as Flatpak does) that names
    /// a path is refused and told to pass the file; outside a sandbox the same call works.
    func testASandboxedCallerCannotNameAFile() async throws {
        let recording = "/usr/share/pocketsphinx/test/data/goforward.raw"
        let call = ["/usr/bin/busctl", "--user", "call", Speech1.busName, Speech1.objectPath, Speech1.interfaceName,
                    "Recognize", "a{sv}", "1", "file", "s", recording]
        let sandboxed = try flatpakSandbox() + call
        let (status, output) = try run(sandboxed)
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(output.contains("cannot name a file"), output)
        XCTAssertTrue(output.contains("option fd"), output)
        let (plainStatus, plainOutput) = try run(call)
        XCTAssertEqual(plainStatus, 0, plainOutput)
        XCTAssertTrue(plainOutput.contains("go forward ten meters"), plainOutput)
    }

    /// A stream names no file: a sandboxed caller may recognize audio it pipes in (the client,
    /// run inside bubblewrap with /.flatpak-info, reading a pipe from outside).
    func testASandboxedCallerMayStream() async throws {
        // The instrumented client cannot write its sanitizer report from inside the sandbox.
        if underSanitizer { throw XCTSkip("the client runs inside bubblewrap, where a sanitizer cannot write its report") }
        let sandboxed = try flatpakSandbox(["--ro-bind", "/opt", "/opt", "--ro-bind", stack.clientPath, "/voicebox"])
            + ["/voicebox", "listen", "--stdin"]
        let recording = "/usr/share/pocketsphinx/test/data/goforward.raw"
        let result = try runProgram(["/bin/sh", "-c", "cat \"$0\" | \"$@\" 2>&1", recording] + sandboxed, seconds: 60)
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(result.output, "go forward ten meters\n")
    }

    func testSandboxesAreToldByTheirMarks() throws {
        let proc = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-proc-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: proc) }
        try FileManager.default.createDirectory(atPath: proc + "/10/root", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: proc + "/10/root/.flatpak-info", contents: Data())
        try FileManager.default.createDirectory(atPath: proc + "/11/root", withIntermediateDirectories: true)
        try "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.firefox.firefox-1.scope\n"
            .write(toFile: proc + "/11/cgroup", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: proc + "/12/root", withIntermediateDirectories: true)
        try "0::/user.slice/user-1000.slice/session-2.scope\n".write(toFile: proc + "/12/cgroup", atomically: true, encoding: .utf8)
        XCTAssertEqual(CallerSandbox.sandbox(ofProcess: 10, proc: proc), "a Flatpak sandbox")
        XCTAssertEqual(CallerSandbox.sandbox(ofProcess: 11, proc: proc), "a Snap sandbox")
        XCTAssertNil(CallerSandbox.sandbox(ofProcess: 12, proc: proc))
    }

    private func descriptorCount(_ pid: pid_t) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }

    /// Runs a command; its status and what it printed (both streams: busctl prints errors on stderr).
    /// bubblewrap's command line up to `--`, with /.flatpak-info in the sandbox's root, as Flatpak
    /// makes it; `extra`: more binds. Skips the test when bubblewrap is not installed.
    private func flatpakSandbox(_ extra: [String] = []) throws -> [String] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/bwrap") else { throw XCTSkip("bubblewrap is not installed") }
        let directory = try makeTemporaryDirectory(self)
        let info = directory.appendingPathComponent("flatpak-info").path
        try "[Application]\nname=org.example.Sandboxed\n".write(toFile: info, atomically: true, encoding: .utf8)
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/run/user/0"
        return ["/usr/bin/bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
                "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
                "--proc", "/proc", "--dev", "/dev", "--bind", runtime, runtime, "--ro-bind", info, "/.flatpak-info"] + extra + ["--"]
    }

    private func run(_ command: [String]) throws -> (Int32, String) {
        let result = try runProgram(["/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1"] + command, seconds: 60)
        return (result.status, result.output)
    }

    /// What a path can make the service read is bounded: a huge sparse file (10 GiB of raw audio,
    /// 93 hours) is refused by its length (TooLarge, before a sample is decoded: decoding it would
    /// outlast the call's 10 s), unless the caller asks for its beginning.
    func testAHugeSparseFileIsRefusedAtOnceUnlessItsBeginningIsAsked() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-huge-\(getpid()).raw").path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(ftruncate(fd, 10 << 30), 0)
        close(fd)
        defer { unlink(path) }
        do {
            _ = try await service.proxy.call(Speech1.recognize, VarDict(["file": .string(path)]), timeout: .seconds(10))
            XCTFail("93 hours of audio were read")
        } catch {
            XCTAssertEqual(error.name, "org.voicebox.Error.TooLarge", error.message)
        }
        let part = try await service.proxy.call(Speech1.recognize, VarDict(["file": .string(path), "max_seconds": .double(2)]),
                                                timeout: .seconds(30))
        XCTAssertEqual(part.text, "")
        XCTAssertEqual(part.details["reason"], .string("max_duration"))
    }
}
