/// The mutations the corpus-replay tests apply to fuzz seeds on every test run, as libFuzzer would: 1 to 8 random byte
/// changes, removals or duplications, from `start` on (past a selector line that keeps an input on its path).
public func mutate(_ seed: [UInt8], from start: Int = 0, using generator: inout some RandomNumberGenerator) -> [UInt8] {
    var input = seed
    for _ in 0..<Int.random(in: 1...8, using: &generator) where input.count > start {
        let index = Int.random(in: start..<input.count, using: &generator)
        switch Int.random(in: 0..<3, using: &generator) {
        case 0: input[index] = UInt8.random(in: 0...255, using: &generator)
        case 1: input.remove(at: index)
        default: input.insert(input[index], at: index)
        }
    }
    return input
}
