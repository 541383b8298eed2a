"""``python -m agents.zoo train|enjoy ...``: rl-zoo3's CLI with the suite's algorithms and hyperparameter files."""

from agents.zoo import main

if __name__ == "__main__":
    main()
