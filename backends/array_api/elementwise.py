"""alpha * x + y in the Array API standard: two library kernels (multiply, then add), no fusion."""


def build(case, inputs, outputs, stream):
    x, y, alpha = inputs["x"], inputs["y"], inputs["alpha"]

    def run():
        return {"z": alpha * x + y}

    return run
