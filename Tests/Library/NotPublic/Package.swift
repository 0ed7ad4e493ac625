// swift-tools-version: 6.1
import PackageDescription

// A client of every library product that names declarations with `package` access: Tests/Library/run expects its
// build to FAIL with an error for each of them ("cannot find ... in scope": another package does not see them). If
// one of them became public, the check fails.
let package = Package(
    name: "NotPublic",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "coaty-edge", path: "../../..")],
    targets: [
        .target(
            name: "Leaks",
            dependencies: [
                .product(name: "CoatyCore", package: "coaty-edge"),
                .product(name: "CoatySharedObjects", package: "coaty-edge"),
                .product(name: "CoatyIORouting", package: "coaty-edge"),
                .product(name: "CoatyEdgeHardware", package: "coaty-edge"),
                .product(name: "CoatyTesting", package: "coaty-edge"),
            ])
    ]
)
