"""The crew's step loop: its state, the tools each role gets, the prompts, the plan and the snapshots."""
