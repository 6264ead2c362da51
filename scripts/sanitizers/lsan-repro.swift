// Why scripts/sanitizers/lsan.supp exists: LeakSanitizer reports Swift values that are still live at exit as
// leaked when the only pointer to them is one the Swift runtime stores encoded. `holder` is a global,
// live until the end, yet its indirect enum box (and the string in it) and its weak-reference side
// table are reported. REAL_LEAK=1 adds a real leak, which the suppressions must not hide.
// How to run it: see scripts/sanitizers/lsan.supp.
import Foundation

indirect enum Value { case number(Int); case text(String) }  // .text: a case number in the spare bits
extension String { var busValue: Value { .text(self) } }       // named as VoiceboxBus's conversions
final class Holder { var values: [String: Value] = [:] }
final class Orphan { var payload = [1, 2, 3] }

let holder = Holder()
holder.values["t"] = String(repeating: "x", count: 40 + CommandLine.arguments.count).busValue
do { weak var passing = holder; _ = passing }  // holder now has a side table, and no weak reference
if ProcessInfo.processInfo.environment["REAL_LEAK"] == "1" { _ = Unmanaged.passRetained(Orphan()) }
print(holder.values.count)
