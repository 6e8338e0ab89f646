"""BabyLM baseline: MLRB's naive baseline, a 6-layer GPT-2 trained from scratch with the MiniPile recipe.

    python baseline/train.py --data DATA_DIR --out MODEL_DIR --budget-s SECONDS [recipe options]
"""

import os
import sys

from challenges.lib.recipe_io import gpt2_recipe

if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads: on a shared CPU, idle threads yield
    sys.exit(gpt2_recipe().main(["--size", "6L-384d", *sys.argv[1:]]))
