"""Edge LLM training baseline: the MiniPile GPT-2 recipe, sized from the budget within data/meta.json's
max_params, so that the float32 model fits the memory limit.

    python baseline/train.py --data DATA_DIR --out MODEL_DIR --budget-s SECONDS [recipe options]
"""

import os
import sys

from challenges.lib.recipe_io import gpt2_recipe

if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads: on a shared CPU, idle threads yield
    sys.exit(gpt2_recipe().main(sys.argv[1:]))
