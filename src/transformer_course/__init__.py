"""Helper package of the transformer course: data, plots and checks with clear messages.

It holds no answers to exercises: checks compare a learner's function with PyTorch's own operations
or with closed-form values.
"""
