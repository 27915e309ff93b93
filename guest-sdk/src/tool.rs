//! Tools and the plugin that registers them.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::{ContentPart, TaskSupport};
use crate::{Ctx, Error};

/// What a handler completes with: text, or a result of several parts.
pub(crate) enum Output {
    Text(String),
    Content(Vec<ContentPart>),
}

/// A boxed handler future.
pub(crate) type HandlerFuture = Pin<Box<dyn Future<Output = Result<Output, Error>>>>;

/// A handler with its arguments still as JSON text.
pub(crate) type Handler = Rc<dyn Fn(&str, Ctx) -> Result<HandlerFuture, Error>>;

/// One tool: its name, what the model reads about it, its argument schema, and the
/// `async` handler that runs it.
pub struct Tool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: Option<serde_json::Value>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) no_prompt: bool,
    pub(crate) hidden: bool,
    pub(crate) title: Option<String>,
    pub(crate) output_schema: Option<serde_json::Value>,
    pub(crate) task_support: TaskSupport,
    pub(crate) handler: Handler,
}

/// The JSON Schema of `T` as a model reads it (no meta-schema URI).
fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    let mut schema = schemars::schema_for!(T);
    schema.remove("$schema");
    schema.to_value()
}

impl Tool {
    /// A tool whose argument schema is derived from `A` (`#[derive(JsonSchema)]`).
    /// The handler receives the arguments decoded into `A`; arguments that do not
    /// decode fail the call with serde's message.
    pub fn new<A, F, Fut>(name: &str, description: &str, handler: F) -> Tool
    where
        A: DeserializeOwned + schemars::JsonSchema + 'static,
        F: Fn(A, Ctx) -> Fut + 'static,
        Fut: Future<Output = Result<String, Error>> + 'static,
    {
        Self::with_schema(name, description, schema_of::<A>(), handler)
    }

    /// A tool with a structured result: the handler returns a value of `O` (a struct,
    /// `#[derive(Serialize, JsonSchema)]`), whose schema is the tool's output schema.
    /// The host checks each result against it, and MCP clients get the value as
    /// structured content; the model reads its JSON text.
    pub fn structured<A, O, F, Fut>(name: &str, description: &str, handler: F) -> Tool
    where
        A: DeserializeOwned + schemars::JsonSchema + 'static,
        O: Serialize + schemars::JsonSchema + 'static,
        F: Fn(A, Ctx) -> Fut + 'static,
        Fut: Future<Output = Result<O, Error>> + 'static,
    {
        let handler = Rc::new(handler);
        let mut tool = Self::new(name, description, move |args: A, ctx: Ctx| {
            let handler = handler.clone();
            async move {
                let output = handler(args, ctx).await?;
                serde_json::to_string(&output)
                    .map_err(|error| Error::new(format!("the result is not JSON: {error}")))
            }
        });
        tool.output_schema = Some(schema_of::<O>());
        tool
    }

    /// A tool whose result is a list of parts (text, images, audio, resource links,
    /// embedded resources: [`ContentPart`]), in order; its argument schema is derived
    /// from `A`.
    pub fn content<A, F, Fut>(name: &str, description: &str, handler: F) -> Tool
    where
        A: DeserializeOwned + schemars::JsonSchema + 'static,
        F: Fn(A, Ctx) -> Fut + 'static,
        Fut: Future<Output = Result<Vec<ContentPart>, Error>> + 'static,
    {
        let handler = Rc::new(handler);
        Self::from_handler(name, description, schema_of::<A>(), move |args: A, ctx| {
            let handler = handler.clone();
            async move { handler(args, ctx).await.map(Output::Content) }
        })
    }

    /// A tool with a schema written by hand (JSON Schema of the arguments object).
    pub fn with_schema<A, F, Fut>(
        name: &str,
        description: &str,
        schema: serde_json::Value,
        handler: F,
    ) -> Tool
    where
        A: DeserializeOwned + 'static,
        F: Fn(A, Ctx) -> Fut + 'static,
        Fut: Future<Output = Result<String, Error>> + 'static,
    {
        let handler = Rc::new(handler);
        Self::from_handler(name, description, schema, move |args: A, ctx| {
            let handler = handler.clone();
            async move { handler(args, ctx).await.map(Output::Text) }
        })
    }

    fn from_handler<A, F, Fut>(
        name: &str,
        description: &str,
        schema: serde_json::Value,
        handler: F,
    ) -> Tool
    where
        A: DeserializeOwned + 'static,
        F: Fn(A, Ctx) -> Fut + 'static,
        Fut: Future<Output = Result<Output, Error>> + 'static,
    {
        let handler: Handler = Rc::new(move |args_json: &str, ctx: Ctx| {
            let args: A = serde_json::from_str(args_json)
                .map_err(|error| Error::new(format!("invalid arguments: {error}")))?;
            Ok(Box::pin(handler(args, ctx)) as HandlerFuture)
        });
        Tool {
            name: name.to_string(),
            description: description.to_string(),
            schema: Some(schema),
            timeout: None,
            no_prompt: false,
            hidden: false,
            title: None,
            output_schema: None,
            task_support: TaskSupport::Optional,
            handler,
        }
    }

    /// Whether the tool's calls may run as tasks, which a client leaves running and
    /// polls for (default: optional, the client chooses).
    pub fn task_support(mut self, support: TaskSupport) -> Tool {
        self.task_support = support;
        self
    }

    /// A short human-readable name for user interfaces (MCP's `title`).
    pub fn title(mut self, title: &str) -> Tool {
        self.title = Some(title.to_string());
        self
    }

    /// The tool's own call deadline (default: the plugin's, from its manifest or the
    /// user's policy).
    pub fn timeout(mut self, timeout: Duration) -> Tool {
        self.timeout = Some(timeout);
        self
    }

    /// The tool has no side effects worth confirming.
    pub fn no_prompt(mut self) -> Tool {
        self.no_prompt = true;
        self
    }

    /// The tool is left out of the schema advertised to the model.
    pub fn hidden(mut self) -> Tool {
        self.hidden = true;
        self
    }
}

/// The tools of a plugin.
#[derive(Default)]
pub struct Plugin {
    pub(crate) tools: Vec<Tool>,
}

impl Plugin {
    /// A plugin without tools yet.
    pub fn new() -> Plugin {
        Plugin::default()
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: Tool) -> Plugin {
        self.tools.push(tool);
        self
    }
}
