import Foundation

// ContractGenerator INPUT.xml OUTPUT.swift: the Swift declarations of the interface INPUT declares
// (SwiftSource). Run at build time by Plugins/ContractPlugin for each of dbus/*.xml; a file it
// cannot read fails the build, naming the line or member.

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: ContractGenerator INPUT.xml OUTPUT.swift\n".utf8))
    exit(64)
}
let input = URL(fileURLWithPath: arguments[1])
let output = URL(fileURLWithPath: arguments[2])
do {
    let file = try InterfaceFile(contentsOf: input)
    var source = SwiftSource(file, errors: try ErrorList(comments: file.comments),
                             source: "dbus/" + input.lastPathComponent)
    let text = try source.text()
    // Left alone when unchanged, so that nothing that depends on it is built again.
    if (try? String(contentsOf: output, encoding: .utf8)) != text {
        try text.write(to: output, atomically: true, encoding: .utf8)
    }
} catch {
    FileHandle.standardError.write(Data("\(input.path): error: \(error)\n".utf8))
    exit(1)
}
