// Why Voicebox locks with VoiceboxThreads.Locked (a pthread mutex) and not Synchronization.Mutex:
// on Linux, ThreadSanitizer does not see Mutex's lock (atomics and futex calls inside the
// uninstrumented standard library), so accesses made under it are reported as races. Four threads
// appending under Mutex.withLock are reported as a "Swift access race" (not on every run: the
// threads must overlap); the same under NSLock, which TSan intercepts (pthread_mutex_lock), never is:
//   swiftc -sanitize=thread -g scripts/sanitizers/mutex-repro.swift -o /tmp/repro
//   for i in 1 2 3 4 5; do /tmp/repro 2>&1 | grep -c 'WARNING: ThreadSanitizer'; done   # mostly 1
//   for i in 1 2 3 4 5; do USE_NSLOCK=1 /tmp/repro 2>&1 | grep -c 'WARNING: ThreadSanitizer'; done   # 0
// (Swift 6.3.1, Debian 12. Tests/VoiceboxThreadsTests does the same over Locked under scripts/test
// --sanitize=thread.)
import Foundation
import Synchronization

let useNSLock = ProcessInfo.processInfo.environment["USE_NSLOCK"] == "1"
final class Box: @unchecked Sendable { var list: [Int] = [] }  // only touched under `lock`
let mutex = Mutex<[Int]>([])
let lock = NSLock(), box = Box()
let group = DispatchGroup()
for t in 0..<4 {
    group.enter()
    Thread {
        for i in 0..<1000 {
            if useNSLock {
                lock.lock(); box.list.append(t * 1000 + i); lock.unlock()
            } else {
                mutex.withLock { $0.append(t * 1000 + i) }
            }
        }
        group.leave()
    }.start()
}
_ = group.wait(timeout: .now() + 60)
print(useNSLock ? lock.withLock { box.list.count } : mutex.withLock { $0.count })
